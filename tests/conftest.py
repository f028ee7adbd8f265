"""Fixtures for the Docker test hosts (see tests/README.md and tests/support/hosts.py)."""

import os
import re
import sys
import threading
from pathlib import Path

import pytest
from support import slow_tier
from support.ansible_envs import ANSIBLE_ENDS
from support.hosts import HOSTS, JETSON_HOSTS, Host, HostPool, docker_engine_problem

HOST_FIXTURES = {
    "x86_host": "x86-debian12",
    "nano_host": "nano-r32.4.3",
    "xavier_host": "xavier-r35.4.1",
    "orin_host": "orin-r36.4.3",
}
PARAMETRIZED_HOST_FIXTURES = ("host", "jetson_host")

_host_pool = pytest.StashKey[HostPool]()


def pytest_configure(config: pytest.Config) -> None:
    # The venv's programs (jetson-env, ansible) on PATH, as scripts/test puts them however
    # pytest is started: the hints name them bare then. test_cli_as_typed.py takes it off.
    venv_bin = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != venv_bin:
        os.environ["PATH"] = os.pathsep.join([venv_bin, os.environ.get("PATH", "")])
    config.stash[_host_pool] = HostPool(keep=os.environ.get("JETSON_ENV_KEEP_HOSTS") == "1")
    if not hasattr(config, "workerinput"):  # the controller, or a run without workers
        config.pluginmanager.register(SlowTierRecord(config), "slow-tier-record")


def pytest_unconfigure(config: pytest.Config) -> None:
    config.stash[_host_pool].close()


# The longest groups of integration tests, about longest first (a cold run on 2 cores,
# tests/README.md): the workers take groups in collection order, so starting with these
# lets them finish at about the same time.
LONGEST_GROUPS = (
    "test_playbook_aarch64.py[newest]",
    # x86 work while the emulated hosts' images build
    "test_images.py",
    "test_provisioning_as_users_run_it.py",
    "test_playbook_aarch64.py[oldest]",
    "test_playbook_x86.py[newest]",
    "test_lived_in.py",
    "test_bundle_offline.py[newest]",
    "test_playbook_x86.py[oldest]",
    "test_torchvision_upstream.py",
    "test_doctor_fix.py",
    "test_doctor_on_hosts.py",
    "test_doctor_fleet.py",
    "test_doctor_hostile.py",
)
ANSIBLE_END_IN_ID = re.compile(r"\[(" + "|".join(ANSIBLE_ENDS) + r")\b")


def group_of(nodeid: str) -> str | None:
    """An integration test's group: its module, and the Ansible end for playbook modules
    (their module-scoped fixtures set up hosts once per end); unit tests have none. Read
    from the node id, which is all that pytest-xdist's scheduler sees."""
    path, _, name = nodeid.partition("::")
    if not path.startswith("tests/integration/"):
        return None
    end = ANSIBLE_END_IN_ID.search(name)
    module = path.rsplit("/", 1)[-1]
    return f"{module}[{end.group(1)}]" if end else module


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """pytest-xdist's workers (scripts/test runs two) take integration tests a group at a
    time, so a group's module-scoped hosts are set up once, on one worker."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid) or nodeid

    return GroupScheduling(config, log)


ANSIBLE_END_CHOICES = ("newest", "oldest", "both")


def _ansible_end(item: pytest.Item) -> str | None:
    """The Ansible end a test runs at (the `ansible` fixture's parameter), if any."""
    return getattr(getattr(item, "callspec", None), "params", {}).get("ansible")


def _at_its_ends(items: list[pytest.Item]) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """(kept, deselected) by each test's `ansible_ends` marker: a test the `ansible` fixture
    runs at both ends must say which end matters and why (tests/README.md); at the other end
    it is deselected, so its module's hosts are not even set up there."""
    kept, deselected = [], []
    for item in items:
        end = _ansible_end(item)
        if end is None:
            kept.append(item)
            continue
        marker = item.get_closest_marker("ansible_ends")
        which = marker.args[0] if marker and marker.args else None
        if which not in ANSIBLE_END_CHOICES or not marker.kwargs.get("why"):
            raise pytest.UsageError(
                f"{item.nodeid} runs at an end of the Ansible range without saying which one "
                "matters: mark it @pytest.mark.ansible_ends('newest'|'oldest'|'both', why=...)"
                " (tests/README.md, 'Playbook tests')"
            )
        (kept if which in ("both", end) else deselected).append(item)
    return kept, deselected


def _mark_slow_tier(items: list[pytest.Item], run_all: bool) -> None:
    """Skip the `slow` tier (unless `run_all`), except a keyed slow test,
    `@pytest.mark.slow(keyed=True)`, that no entry of the record vouches for (support/slow_tier.py):
    it runs; an unkeyed slow test runs only in the slow tier (a test stands alone: none needs
    another's host, and the r36 image's emulated build cost 28 minutes whenever the r32/r35
    builds beside it ran). A keyed test's report
    carries its key and HEAD's commit (JUnit properties), what a complete run's entry keeps."""
    record = slow_tier.read()
    today = slow_tier.head_date()
    commit = slow_tier.git("rev-parse", "HEAD").strip()
    unvouched = set()
    vouched: dict[str, str] = {}
    for item in items:
        marker = item.get_closest_marker("slow")
        if marker is None or not marker.kwargs:
            continue
        if set(marker.kwargs) != {"keyed"} or marker.kwargs["keyed"] is not True:
            raise pytest.UsageError(
                f"{item.nodeid}: a slow test is keyed by @pytest.mark.slow(keyed=True), its inputs "
                "made by exclusion (tests/README.md, 'The slow tier'), not by a list of paths"
            )
        found = slow_tier.inputs(_ansible_end(item))
        key = slow_tier.key_of(found)
        item.user_properties += [(slow_tier.KEY_PROPERTY, key), (slow_tier.COMMIT_PROPERTY, commit)]
        entry = record.get(item.nodeid)
        why = (
            "no entry"
            if entry is None
            else slow_tier.why_not_trusted(item.nodeid, entry, found, today)
        )
        if why is None:
            vouched[item.nodeid] = slow_tier.describe(entry)
        else:
            item.user_properties.append((slow_tier.WHY_PROPERTY, why))
            unvouched.add(item.nodeid)
    for item in items:
        if run_all or "slow" not in item.keywords:
            continue
        if item.nodeid in unvouched:
            continue
        origin = vouched.get(item.nodeid)
        reason = f"slow tier, {origin} ({slow_tier.RECORD.name})" if origin else "slow tier"
        item.add_marker(pytest.mark.skip(reason=f"{reason}: JETSON_ENV_SLOW=1 runs it"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test at the Ansible ends that matter for it; the longest groups of tests first
    (for pytest-xdist, above).

    The `slow` tier (emulated aarch64 image builds, real torchvision builds; tests/README.md)
    runs with JETSON_ENV_SLOW=1 or -m slow, and a keyed slow test whenever its inputs change."""
    kept, deselected = _at_its_ends(items)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
    rank = {group: index for index, group in enumerate(LONGEST_GROUPS)}
    items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(rank)))  # stable
    run_all = os.environ.get("JETSON_ENV_SLOW") == "1" or "slow" in (config.option.markexpr or "")
    if not config.option.collectonly:  # keys need the Ansible ends' venvs: a listing does not
        _mark_slow_tier(items, run_all)


class SlowTierRecord:
    """The controller's side of the record (under pytest-xdist the workers only run tests): it
    collects the keyed tests' reports and, after a complete run (support/slow_tier.py:
    a clean tree, the whole selection, not stopped early, a JUnit report), writes an entry for
    each keyed test whose setup, call and teardown passed and drops the entry of one that failed
    or errored in any of them; a skipped one's entry stays as it was."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.commit = slow_tier.git("rev-parse", "HEAD").strip()
        self.problem = (
            slow_tier.why_incomplete(config.option, config.args, config.invocation_params.dir)
            or slow_tier.why_unclean()
        )
        self.outcomes: dict[str, dict[str, str]] = {}
        self.found: dict[str, dict] = {}
        self.summary = ""
        self.ran: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        if slow_tier.KEY_PROPERTY in properties:
            self.outcomes.setdefault(report.nodeid, {})[report.when] = report.outcome
            self.found[report.nodeid] = properties
            if report.when == "setup" and slow_tier.WHY_PROPERTY in properties:
                self.ran.append(
                    f"slow tier: {report.nodeid} runs: {properties[slow_tier.WHY_PROPERTY]}"
                )

    @pytest.hookimpl(trylast=True)  # after the JUnit report is written
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.outcomes:
            return
        problem = self.problem or self._problem_at_the_end(session, exitstatus)
        if problem:
            self.summary = f"slow tier: the record is not written: {problem}"
            return
        testcases = slow_tier.junit_testcases(Path(self.config.option.xmlpath))
        written, dropped = {}, set()
        for nodeid, phases in self.outcomes.items():
            if "skipped" in phases.values():  # skipped (vouched for, or skipped itself): as it was
                continue
            if phases == dict.fromkeys(("setup", "call", "teardown"), "passed"):
                junit = testcases[slow_tier.junit_names(nodeid)]
                entry = slow_tier.entry_for(slow_tier.inputs(self._end(nodeid)), self.commit, junit)
                if entry["key"] != self.found[nodeid][slow_tier.KEY_PROPERTY]:
                    raise RuntimeError(f"{nodeid}: its inputs changed during the run")
                written[nodeid] = entry
            else:
                dropped.add(nodeid)
        slow_tier.update(written, dropped)
        self.summary = (f"slow tier: {len(written)} entries written, {len(dropped)} dropped "
                        f"in {slow_tier.RECORD.relative_to(slow_tier.REPO_ROOT)}")  # fmt: skip

    def _problem_at_the_end(self, session: pytest.Session, exitstatus: int) -> str | None:
        if session.shouldfail or session.shouldstop or exitstatus not in (0, 1):
            return "the run stopped early"
        if not self.config.option.xmlpath:
            return "no JUnit report (--junitxml; scripts/test writes one)"
        if slow_tier.git("rev-parse", "HEAD").strip() != self.commit:
            return "HEAD moved during the run"
        return slow_tier.why_unclean()

    @staticmethod
    def _end(nodeid: str) -> str | None:
        end = ANSIBLE_END_IN_ID.search(nodeid.partition("::")[2])
        return end.group(1) if end else None

    def pytest_terminal_summary(self, terminalreporter) -> None:
        for line in [*self.ran, self.summary]:
            if line:
                terminalreporter.write_line(line)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Where the time went, per test module (per group for the integration tests): the sum of
    pytest's own reports' durations (setup, call and teardown; from the workers under xdist),
    longest first. scripts/test prints this, pytest's --durations and its phases every run."""
    seconds: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if isinstance(report, pytest.TestReport):
                group = group_of(report.nodeid) or report.nodeid.partition("::")[0]
                seconds[group] = seconds.get(group, 0.0) + report.duration
    if not seconds:
        return
    terminalreporter.write_sep("=", "time per test module (and Ansible end), summed")
    for group, total in sorted(seconds.items(), key=lambda item: -item[1])[:30]:
        terminalreporter.write_line(f"{total:8.1f}s  {group}")
    terminalreporter.write_line(f"{sum(seconds.values()):8.1f}s  in all (over every worker)")


def _hosts_needed_by(item: pytest.Item) -> set[str]:
    fixtures = getattr(item, "fixturenames", ())
    needed = {HOST_FIXTURES[name] for name in fixtures if name in HOST_FIXTURES}
    params = getattr(getattr(item, "callspec", None), "params", {})
    needed.update(params[name] for name in PARAMETRIZED_HOST_FIXTURES if name in params)
    return needed & HOSTS.keys()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start building the images of the hosts the selected tests use, before the first test.

    The emulated arm64 build takes minutes on a fresh machine; doing it in the background
    overlaps it with the amd64 build and with the tests that need no host.
    """
    if session.config.option.collectonly:
        return
    needed = set().union(*(_hosts_needed_by(item) for item in session.items))
    if needed and docker_engine_problem() is None:
        session.config.stash[_host_pool].prepare(sorted(needed))
    # The two Ansible venvs (a minute or two each) install meanwhile; the `ansible` fixture
    # waits for them (a file lock) and reports any failure itself.
    if any("ansible" in getattr(item, "fixturenames", ()) for item in session.items):
        for end in ANSIBLE_ENDS.values():
            threading.Thread(target=end.ensure, name=f"ansible-{end.name}", daemon=True).start()


@pytest.fixture(scope="session")
def host_pool(pytestconfig: pytest.Config) -> HostPool:
    """The session's host manager; the Docker engine must be up (CI must not skip)."""
    problem = docker_engine_problem()
    if problem:
        pytest.fail(
            "The test hosts need a running Docker engine; run `bash scripts/test`, which "
            f"installs Docker, starts dockerd and enables aarch64 emulation.\n{problem}",
            pytrace=False,
        )
    return pytestconfig.stash[_host_pool]


@pytest.fixture(scope="session")
def x86_host(host_pool: HostPool) -> Host:
    return host_pool.get(HOST_FIXTURES["x86_host"])


@pytest.fixture(scope="session")
def nano_host(host_pool: HostPool) -> Host:
    return host_pool.get(HOST_FIXTURES["nano_host"])


@pytest.fixture(scope="session")
def xavier_host(host_pool: HostPool) -> Host:
    return host_pool.get(HOST_FIXTURES["xavier_host"])


@pytest.fixture(scope="session")
def orin_host(host_pool: HostPool) -> Host:
    return host_pool.get(HOST_FIXTURES["orin_host"])


@pytest.fixture(scope="session", params=JETSON_HOSTS)
def jetson_host(request: pytest.FixtureRequest, host_pool: HostPool) -> Host:
    """Each emulated Jetson in turn."""
    return host_pool.get(request.param)


@pytest.fixture(scope="session")
def host(request: pytest.FixtureRequest, host_pool: HostPool) -> Host:
    """The host named by indirect parametrization: parametrize("host", [...], indirect=True)."""
    name = getattr(request, "param", None)
    if name not in HOSTS:
        pytest.fail(f"`host` needs indirect parametrization with one of {sorted(HOSTS)}")
    return host_pool.get(name)
