"""--fix: the plan per role and the summary per finding, without Ansible (its
ansible-playbook command and variables file: test_playbook_runs.py)."""

from pathlib import Path

from jetson_env import collection, fixing
from jetson_env.bundle.preflight import Provisioning
from jetson_env.doctor import Report
from jetson_env.findings import FAIL, OK, Finding, Remedy
from jetson_env.probing import ProbeResult

ROLES = collection.provision_roles()


def finding(check: str, status: str = FAIL, role: str | None = None) -> Finding:
    why = "" if role else "a download behind a login"
    remedy = Remedy(f"fix {check}", role, why=why) if status != OK else None
    return Finding(check, "area", status, f"{check} is {status}", (), remedy)


def report(*findings: Finding) -> Report:
    return Report("host", None, list(findings), {})


BEFORE = report(finding("termcolor", role="python_base"), finding("cuda", role="cuda_env"),
                finding("tensorrt-python"), finding("platform", OK))  # fmt: skip


def test_the_role_filter_leaves_findings_out_instead_of_calling_them_manual():
    plan = fixing.plan(BEFORE, ROLES, only=["cuda_env"])
    assert plan.roles == ["cuda_env"]
    assert [f.check for f in plan.left_out] == ["termcolor"]
    assert [f.check for f in plan.manual] == ["tensorrt-python"]


def test_each_finding_gets_a_verdict_with_the_reason():
    plan = fixing.plan(BEFORE, ROLES)
    runs = [
        fixing.RoleRun("cuda_env", applied=True, changed=1),
        fixing.RoleRun("python_base", plan_error="Fetch the apt package lists: offline"),
    ]
    # cuda keeps a warning no role fixes (no compiler): cuda_env's own finding is still fixed.
    after = report(finding("termcolor", role="python_base"), finding("cuda", OK),
                   finding("cuda", "warn"), finding("tensorrt-python"))  # fmt: skip

    rows = {r["check"]: r for r in fixing.verdicts(BEFORE, plan, fixing.RoleRuns("applied", runs),
                                                   after)}  # fmt: skip

    assert rows["cuda"]["verdict"] == fixing.FIXED
    assert rows["termcolor"]["verdict"] == fixing.FAILED
    assert rows["termcolor"]["why"] == (
        "the plan of role python_base: Fetch the apt package lists: offline"
    )
    assert rows["tensorrt-python"]["verdict"] == fixing.NO_AUTOMATIC_FIX
    assert "platform" not in rows  # ok: nothing to fix


def test_a_fix_that_asks_for_one_package_set_does_not_drop_the_rest_another_fix_needs():
    """onnx missing for the smoke asks the tensorrt role for its onnx set alone; a remedy of
    that role beside it that names no tensorrt_sets asks for the whole role: the role must
    still install TensorRT, not only onnx."""
    onnx = Remedy("pip install onnx", "tensorrt", (("tensorrt_sets", ["onnx"]),))
    alone = report(Finding("smoke", "smoke", FAIL, "ONNX: failed", (), onnx))
    assert fixing.plan(alone, ROLES).variables == {"tensorrt_sets": ["onnx"]}

    both = report(Finding("smoke", "smoke", FAIL, "ONNX: failed", (), onnx),
                  finding("libnvinfer", role="tensorrt"))  # fmt: skip
    assert fixing.plan(both, ROLES).variables == {"tensorrt_sets": ["onnx", "tensorrt"]}


def test_a_role_that_ran_but_did_not_fix_says_what_is_left():
    plan = fixing.plan(BEFORE, ROLES, only=["cuda_env"])
    runs = [fixing.RoleRun("cuda_env", applied=True, changed=0)]
    rows = {r["check"]: r for r in fixing.verdicts(BEFORE, plan, fixing.RoleRuns("applied", runs),
                                                   BEFORE)}  # fmt: skip
    assert rows["cuda"]["verdict"] == fixing.FAILED
    assert rows["cuda"]["why"] == "still fail after role cuda_env: cuda is fail"
    assert rows["termcolor"]["verdict"] == fixing.LEFT_OUT
    assert rows["termcolor"]["why"] == "--fix cuda_env leaves out role python_base"


def test_a_bundle_runs_only_the_roles_it_serves_and_its_variable_wins():
    """`doctor --fix --bundle B`: the roles `provision --bundle B` runs (bundle's Provisioning),
    the others left out with the bundle named; B's variable over --playbook-vars', as the
    last -e of provision."""
    bundle = Provisioning(Path("/srv/b"), ["cuda_env", "python_base"], "0" * 64)
    before = report(finding("termcolor", role="python_base"), finding("pycuda", role="pycuda"),
                    finding("tensorrt-python"))  # fmt: skip
    plan = fixing.plan(before, ROLES, bundle=bundle)
    assert plan.roles == ["python_base"]
    assert [f.check for f in plan.left_out] == ["pycuda"]
    runs = [fixing.RoleRun("python_base", applied=True, changed=1)]
    rows = {r["check"]: r for r in fixing.verdicts(before, plan, fixing.RoleRuns("applied", runs),
                                                   report())}  # fmt: skip
    assert rows["termcolor"]["verdict"] == fixing.FIXED
    assert rows["pycuda"]["verdict"] == fixing.LEFT_OUT
    assert rows["pycuda"]["why"] == (
        "the bundle /srv/b does not serve role pycuda (it serves cuda_env,python_base)"
    )
    # The user's role filter is named first where it is what leaves a role out.
    only = fixing.plan(before, ROLES, only=["python_base"], bundle=bundle)
    assert only.why_left_out("pycuda") == "--fix python_base leaves out role pycuda"
    setup = fixing.fix_request([], '{"jetson_env_bundle": "/elsewhere", "x": 1}', bundle)
    assert setup.variables == {"jetson_env_bundle": "/elsewhere", "x": 1} and setup.bundle is bundle
    variables = fixing.host_variables(before, "/usr/bin/python3", plan, setup)
    assert variables["jetson_env_bundle"] == "/srv/b" and variables["x"] == 1  # the bundle's wins
    assert variables["jetson_env_bundle_manifest_sha256"] == "0" * 64


def test_the_roles_install_into_the_probed_python_not_ansibles():
    """The doctor ran `python3` (a pyenv shim); its platform probe says which interpreter that
    is: the roles install into that one, and on this machine Ansible runs modules with it too
    (jetson_env.target_python), elsewhere with its own."""
    probed = "/home/u/.pyenv/versions/3.11.7/bin/python3"
    platform = ProbeResult("platform", {"python": {"executable": probed}}, None, 0.1)
    before = Report("host", None, BEFORE.findings, {"platform": platform})
    plan = fixing.plan(before, ROLES)
    setup = fixing.FixRequest(ROLES, None, "ansible-playbook", {"tensorrt_tarball": "/t.tgz"})
    remote = fixing.host_variables(before, "python3", plan, setup)
    assert remote["jetson_facts_python"] == probed
    assert "ansible_python_interpreter" not in remote
    assert remote["tensorrt_tarball"] == "/t.tgz"
    local = fixing.host_variables(before, "python3", plan, setup, local=True)
    assert local["jetson_facts_python"] == local["ansible_python_interpreter"] == probed
