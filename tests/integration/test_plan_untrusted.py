"""`jetson-env plan` with what a host says taken as untrusted (issue 48, items 4, 6 and 7).

Its printed commands run literally (bash -c of each line, as a user pastes it) with a stub
`jetson-env` and `sudo` that record their argv: each value from a host is one argument, and
nothing else runs. One host's facts of another shape stop that host's plan only; its report
files escape control characters; the engines probe says what it left out, and a sidecar
nested too deep costs only its own engine (the probe runs for real in this interpreter).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jetson_env import matrix
from jetson_env.plan import assembly, judgement
from jetson_env.plan import page as plan_page
from jetson_env.probing import ProbeResult, parse, probe_all, wrong_shape
from jetson_env.targets import LocalTarget

MATRIX = matrix.load()
TO = MATRIX.release("36.5.0")
RECORD = """#!{python}
import json, os, sys
with open(os.environ["RECORDED"], "a") as handle:
    handle.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\\n")
"""


def sandbox_run(tmp_path: Path, line: str) -> list[list[str]]:
    """`bash -c LINE` with only the stubs and the shell's tools on PATH: the argv of every
    stub it ran; a payload that runs leaves a file in tmp_path/marks."""
    stubs = tmp_path / "stubs"
    stubs.mkdir(exist_ok=True)
    for name in ("jetson-env", "sudo"):
        (stubs / name).write_text(RECORD.format(python=sys.executable))
        (stubs / name).chmod(0o755)
    recorded = tmp_path / "recorded"
    recorded.unlink(missing_ok=True)
    subprocess.run(["bash", "-c", line], check=True, cwd=tmp_path, timeout=60,
                   env={"PATH": f"{stubs}:/usr/bin:/bin", "RECORDED": str(recorded)})  # fmt: skip
    return [json.loads(row) for row in recorded.read_text().splitlines()]


def planned(name: str, python: str, kind: str = judgement.APT) -> dict:
    return {"host": name, "kind": kind, "status": "survives", "distribution": "ubuntu/jammy",
            "python": {"version": "3.10.12", "executable": python, "venv": True}}  # fmt: skip


@pytest.mark.parametrize("ssh_host", [None, "jetson@[fd00::7]:2222"])
def test_the_printed_commands_pass_each_value_as_one_argument(tmp_path: Path, ssh_host):
    marks = tmp_path / "marks"
    marks.mkdir()
    python = (f"/opt/v $(touch {marks}/dollar) `touch {marks}/tick`;touch {marks}/semi; "
              f"extra=1 {{{{ lookup('pipe','touch {marks}/jinja') }}}}/bin/python")  # fmt: skip
    bundle = f"/srv/b ';touch {marks}/quote'"
    request = assembly.Request(TO, (), bundle, None, None, ssh_host)
    found = assembly.commands(request, [planned("orin", python)])

    provision, doctor = (sandbox_run(tmp_path, line) for line in found["after"])
    (before,) = (sandbox_run(tmp_path, line) for line in found["before"])

    assert sorted(p.name for p in marks.iterdir()) == []
    assert before == [["jetson-env", "bundle", bundle, "--l4t", "R36.5.0", "--distribution",
                       "ubuntu/jammy"]]  # fmt: skip
    if ssh_host is None:
        assert provision == [["jetson-env", "provision", "--bundle", bundle, "--python", python]]
        assert doctor == [["jetson-env", "doctor", "--python", python]]
    else:  # no key=value: `-e ansible_user=...` would split a value at a space
        connection = json.dumps({"ansible_user": "jetson", "ansible_port": 2222})
        assert provision == [["jetson-env", "provision", "--bundle", bundle, "-i", "fd00::7,",
                              "-e", connection, "--python", python]]  # fmt: skip
        assert doctor == [["jetson-env", "doctor", "--host", ssh_host, "--python", python]]
    assert not any("jetson_facts_python=" in line for line in found["after"])


@pytest.mark.parametrize("package", ["nvidia-l4t-gpio", "libstdc++6:arm64", "x;touch MARK",
                                     "$(touch MARK)", "a b", "Upper"])  # fmt: skip
def test_a_held_packages_command_names_it_as_one_argument_or_not_at_all(tmp_path, package):
    marks = tmp_path / "marks"
    marks.mkdir()
    package = package.replace("MARK", str(marks / "held"))
    apt = {"holds": [package], "simulation": {"ok": True, "kept_back": [package], "changes": []}}
    change = judgement.Change(MATRIX.release("36.4.3"), TO, "3.10", "3.10", judgement.APT)
    (part,) = judgement._apt_parts(apt, change)

    commands = re.findall(r"`([^`]*)`", part.reason)
    ran = [argv for line in commands for argv in sandbox_run(tmp_path, line)]

    assert part.verdict == "blocked" and sorted(p.name for p in marks.iterdir()) == []
    if judgement.DEBIAN_PACKAGE.fullmatch(package):
        assert ran == [["sudo", "apt-mark", "unhold", package]]
    else:
        assert ran == [] and "not a Debian package name" in part.reason


def facts(**overrides) -> dict[str, ProbeResult]:
    platform = {"is_jetson": True, "machine": "aarch64", "l4t": "36.4.3", "l4t_source": "f",
                "board": None, "model": "Orin", "soc": "tegra234", "os": {},
                "python": {"version": "3.10.12", "executable": "/usr/bin/python3"}}  # fmt: skip
    data = {"platform": platform, "cuda": {"version": "12.6.68"},
            "compiled": {"python": {"version": "3.10.12"}, "distributions": [], "pure": 1},
            "engines": {"engines": []}, "apt_upgrade": {"simulation": {"skipped": "no"}},
            **overrides}  # fmt: skip
    return {name: ProbeResult(name, value, None, 0.1) for name, value in data.items()}


# Facts of another shape, and the host's status: unreachable (no plan from them), or a plan
# where they are only shown (as text).
ODD = {
    "compiled-list": ({"compiled": {"python": [], "distributions": "torch", "pure": "x"}},
                    "unreachable"),
    "distributions": ({"compiled": {"distributions": [["torch"]], "pure": 0}}, "unreachable"),
    "python": ({"compiled": {"python": {"version": ["3.10"], "executable": 7, "venv": 1}}},
               "unreachable"),
    "nan": ({"compiled": {"distributions": [], "pure": float("nan")}}, "unreachable"),
    "infinite": ({"compiled": {"distributions": [], "pure": float("inf")}}, "unreachable"),
    "unread": ({"compiled": {"distributions": [], "pure": 1, "unread": ["/a.dist-info"]}},
               "unreachable"),
    "engines": ({"engines": {"engines": [{"path": "/a", "tensorrt": {"x": 1}}]}}, "unknown"),
    "apt": ({"apt_upgrade": {"holds": [[1]], "simulation": {"ok": True, "kept_back": [[1]]}}},
            "blocked"),
    "kernels": ({"kernels": {"packages": [{"name": "x", "files": [{"sass": [87]}]}]}},
                "unreachable"),
}  # fmt: skip


@pytest.mark.parametrize("odd", list(ODD))
def test_one_hosts_odd_facts_stop_only_its_plan(tmp_path: Path, odd: str):
    request = assembly.Request(TO, (), "/b", "fleet.yml", None)
    hosts = [assembly.host_plan(MATRIX, "good", facts(), request),
             assembly.host_plan(MATRIX, "odd", facts(**ODD[odd][0]), request)]  # fmt: skip
    data = assembly.document(request, hosts)
    text = json.dumps(data, allow_nan=False)  # one JSON document, whatever the host said

    by_name = {h["host"]: h for h in json.loads(text)["hosts"]}
    assert by_name["good"]["kind"] == judgement.APT and by_name["good"]["parts"]
    assert by_name["odd"]["status"] == ODD[odd][1], by_name["odd"]
    if ODD[odd][1] == "unreachable":
        assert by_name["odd"]["error"].startswith("a probe printed facts of the wrong shape")
        assert data["commands"]["after"][0].endswith("--limit good")
        assert data["exit_code"] == 3
    for suffix in (".html", ".md"):
        plan_page.render(data, suffix)


def test_the_wrong_shape_message_is_the_doctors():
    assert wrong_shape(KeyError("l4t"), "platform") == (
        "probe 'platform' printed facts of the wrong shape (KeyError: 'l4t')"
    )


def test_a_number_past_a_floats_range_is_no_fact():
    """1e400 in a probe's record (json reads it as infinity, which int() refuses): the record
    is not read, as NaN's is not."""
    assert parse('{"pure": 1e400}') is parse("NaN") is not parse('{"pure": 1e300}')


def test_a_report_escapes_what_the_host_said(tmp_path: Path):
    request = assembly.Request(TO, (), "/b", "fleet.yml", None)
    evil = "\x1b]8;;http://x\x07link\x1b[2J \udcff"
    apt = {"holds": [evil], "simulation": {"ok": True, "kept_back": [evil], "changes": []}}
    host = assembly.host_plan(MATRIX, "orin", facts(apt_upgrade=apt), request)
    data = assembly.document(request, [host])
    for suffix in (".html", ".md"):
        page = plan_page.render(data, suffix)
        assert "\x1b" not in page and "\x07" not in page
        assert "x1b]8;;http://x" in page.replace("\\", "")  # shown, escaped
        page.encode("utf-8")  # a lone surrogate (bytes that were not UTF-8) is shown escaped
        assert "\\udcff" in page


def test_the_engines_probe_says_what_it_left_out_and_a_deep_sidecar_is_its_engines_own(
    tmp_path: Path,
):
    folder = tmp_path / "models"
    folder.mkdir()
    for number in range(203):
        (folder / f"e{number:03d}.engine").write_bytes(b"\0" * 8)
    (folder / "e000.engine.json").write_text("[" * 60000)  # past the JSON parser's depth
    (folder / "e001.engine.json").write_text('{"tensorrt": "10.3.0"}')
    found = probe_all(LocalTarget(sys.executable), ["engines"], 60, lambda _: None,
                      {"engines": {"folders": [str(folder)]}})["engines"]  # fmt: skip

    assert found.ok, found.error
    engines = {Path(e["path"]).name: e for e in found.data["engines"]}
    assert len(engines) == 200 and found.data["left_out"] == 3
    assert engines["e001.engine"]["tensorrt"] == "10.3.0"
    assert "e000.engine.json" in engines["e000.engine"]["unknown"]
    change = judgement.Change(MATRIX.release("36.4.3"), TO, "3.10", "3.10", judgement.APT)
    parts = {p.name: p for p in judgement._engine_parts(found.data, change)}
    assert parts["3 more engines"].verdict == "unknown"
    assert "past the first 200" in parts["3 more engines"].reason
    assert os.path.isdir(folder)
