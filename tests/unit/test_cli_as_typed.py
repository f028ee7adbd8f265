"""Issue 59: what a user types means what it says. The installed console script, run by its full
path from an unrelated folder, as README's first line leaves it (in .venv, not on PATH):
a folder named on the command line that this machine does not have is bad input (exit 2
before any probe); -q silences progress and the spinner wherever it is typed; a misspelled
option or command is refused with its command's usage and the word meant; -l/--limit and
-f/--forks are the same options in every command that takes -i; one word per idea (--roles,
--python an interpreter, bundle's --python-version); --version says what runs; ASCII where
the locale has no box drawing; the shell completes what is typed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from support.terminal import on_a_pty

JETSON_ENV = str(Path(sys.executable).with_name("jetson-env"))  # the console script


def environment(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS")}  # fmt: skip
    return {**env, "TERM": "xterm-256color", **more}


def piped(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([JETSON_ENV, *args], cwd=cwd, env=env or environment(),
                          capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def on_a_terminal(*args: str, cwd: Path) -> tuple[int, str]:
    """The console script on a pseudo-terminal: its exit code and all it wrote there."""
    return on_a_pty([JETSON_ENV, *args], cwd, environment(), timeout=300)


@pytest.mark.parametrize(
    "args",
    [
        ["doctor", "--engines", "/nonexistent"],
        ["doctor", "--quick", "--engines", "{models}", "--engines", "/nonexistent/models"],
        ["doctor", "--check", "engine-files", "--engines", "/nonexistent", "--fix", "--yes"],
        ["doctor", "--check", "engine-files", "--engines", "{file}"],
        ["plan", "--to", "R36.5.0", "--engines", "/nonexistent"],
    ],
    ids=" ".join,
)
def test_a_mistyped_folder_here_is_bad_input_before_any_probe(args, tmp_path):
    """`doctor --engines /nonexistent` on this machine: exit 2 with the path and what to give
    (as for a missing -i file), nothing probed or fixed; also in --json's one document. (--fix
    goes with --check engine-files: on code that lets the typo pass, no role may run here.)"""
    (tmp_path / "models").mkdir()
    (tmp_path / "model.engine").write_bytes(b"ftrt")
    args = [a.format(models=tmp_path / "models", file=tmp_path / "model.engine") for a in args]
    wrong = next(a for a in args if a.startswith("/nonexistent") or a.endswith(".engine"))
    what = "not a folder" if wrong.endswith(".engine") else "no such folder"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = piped("--no-color", *args, cwd=elsewhere)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: --engines {wrong}: {what} on this machine",
        "  -> give the folder that holds the engine files (.engine, .plan, .trt); a folder on "
        "another host: --host USER@HOST or -i INVENTORY",
    ], done.stderr  # no "probing ..." line: nothing ran
    as_json = piped(*args, "--json", cwd=elsewhere)
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"] == f"--engines {wrong}: {what} on this machine"
    assert list(elsewhere.iterdir()) == []


QUIET_COMMANDS = {  # each with what its answer says, quiet or not, and whether a pipe gets
    # progress lines without -q (a spinner is a terminal's only)
    "doctor": (["doctor", "--quick", "--check", "platform"], "jetson-env doctor: local", True),
    "info": (["info"], "Python", False),
}


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("command", sorted(QUIET_COMMANDS))
def test_quiet_leaves_out_progress_and_the_spinner_wherever_typed(command, where, tmp_path):
    """-q (before or after the command): on a terminal no spinner, in a pipe no progress
    line; the answer and the exit code stay. The same run without -q shows the progress,
    so its absence is -q's doing."""
    args, answer, progress_in_a_pipe = QUIET_COMMANDS[command]
    quiet = ["-q", *args] if where == "before" else [*args, "-q"]
    code, said = on_a_terminal(*args, cwd=tmp_path)
    assert "probing local" in said, said[-2000:]  # the spinner's text
    quiet_code, quiet_said = on_a_terminal(*quiet, cwd=tmp_path)
    assert quiet_code == code, quiet_said[-2000:]
    assert answer in quiet_said, quiet_said[-2000:]
    assert "probing" not in quiet_said and "\x1b[?25l" not in quiet_said, quiet_said[:2000]
    loud, hushed = piped(*args, cwd=tmp_path), piped(*quiet, cwd=tmp_path)
    assert ("probing local" in loud.stderr) is progress_in_a_pipe, loud.stderr
    assert hushed.returncode == loud.returncode and answer in hushed.stdout
    assert hushed.stderr == "", hushed.stderr


VENV_BIN = Path(sys.executable).parent


def off_path() -> dict[str, str]:
    """The environment of a user who made the venv as README's first line does and did not
    activate it: neither jetson-env nor Ansible is on PATH."""
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if p and Path(p).resolve() != VENV_BIN.resolve())  # fmt: skip
    for program in ("jetson-env", "ansible"):
        assert shutil.which(program, path=path) is None, f"{program} is on PATH elsewhere"
    return {**environment(), "PATH": path, "NO_COLOR": "1", "COLUMNS": "300"}


def pasted(line: str, cwd: Path) -> subprocess.CompletedProcess:
    """`line` as the user pastes it into a shell, in the same environment."""
    return subprocess.run(["sh", "-c", line], cwd=cwd, env=off_path(), capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)  # fmt: skip


def printed_after(text: str, before: str) -> str:
    """The rest of the line of `text` that follows `before`."""
    (line,) = [line for line in text.splitlines() if before in line]
    return line.split(before, 1)[1].strip()


@pytest.fixture
def bare_python(tmp_path: Path) -> str:
    """A venv with nothing installed (not even pip): termcolor is missing there."""
    venv.create(tmp_path / "bare", with_pip=False)
    return str(tmp_path / "bare" / "bin" / "python")


def test_a_printed_fix_runs_when_pasted_where_jetson_env_is_not_on_path(bare_python, tmp_path):
    """The console script by its full path, PATH without its venv: the doctor's "or the
    playbook's role" line names this jetson-env by its path and the Python it checked, and
    pasted as printed it runs that --fix (here it stops at the question: no terminal, nothing
    changed). A hint in backticks runs too."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([JETSON_ENV, "doctor", "--check", "termcolor", "--python", bare_python],
                          cwd=elsewhere, env=off_path(), capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    line = printed_after(done.stdout, "or the playbook's role python_base: ")
    assert shlex.split(line) == [JETSON_ENV, "doctor", "--python", bare_python, "--fix",
                                 "python_base"]  # fmt: skip
    fix = pasted(line, elsewhere)
    said = fix.stdout + fix.stderr
    assert fix.returncode != 127 and "sh: 1: " not in fix.stderr, said
    assert "--fix: role python_base on localhost fixes termcolor" in said, said
    assert fix.returncode in (1, 2), said  # no terminal to ask, or the plan failed: no change

    unknown = subprocess.run([JETSON_ENV, "doctor", "--check", "no-such-check"], cwd=elsewhere,
                             env=off_path(), capture_output=True, text=True)  # fmt: skip
    hint = printed_after(unknown.stderr, "-> ").split("`")[1]
    assert hint == f"{JETSON_ENV} doctor --list"
    listed = pasted(hint, elsewhere)
    assert listed.returncode == 0 and "termcolor" in listed.stdout, listed.stderr


def test_a_fleets_printed_commands_run_when_pasted(bare_python, tmp_path):
    """doctor -i, PATH without the venv: the fleet's --fix line names this jetson-env by its
    path, the unreachable host's ping names the venv's Ansible by its path; pasted as
    printed, each runs (Ansible says why the host is down; --fix stops at the question)."""
    inventory = tmp_path / "inv.yml"
    inventory.write_text(
        "all:\n  hosts:\n"
        f"    here: {{ansible_connection: local, ansible_python_interpreter: {bare_python}}}\n"
        "    down: {ansible_host: 127.0.0.1, ansible_port: 1, ansible_python_interpreter: "
        "/usr/bin/python3}\n"
    )
    done = subprocess.run([JETSON_ENV, "doctor", "-i", "inv.yml", "--check", "termcolor"],
                          cwd=tmp_path, env=off_path(), capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 3, said
    lines = done.stdout.splitlines()
    fix = lines[lines.index("Fix the fleet with the playbook's roles:") + 1]
    assert shlex.split(fix) == [JETSON_ENV, "doctor", "-i", "inv.yml", "--fix", "python_base"]
    (ping,) = [line for line in lines if "ansible.builtin.ping" in line]
    ansible = str(VENV_BIN / "ansible")
    assert shlex.split(ping) == [ansible, "down", "-i", "inv.yml", "-m", "ansible.builtin.ping",
                                 "-vvv"]  # fmt: skip

    pinged = pasted(ping, tmp_path)
    assert pinged.returncode == 4 and "UNREACHABLE" in pinged.stdout, pinged.stderr
    fixed = pasted(fix, tmp_path)
    said = fixed.stdout + fixed.stderr
    assert fixed.returncode != 127 and "sh: 1: " not in fixed.stderr, said
    assert "--fix: role python_base on here fixes termcolor" in said, said


def test_the_pip_tensorrt_fix_says_it_needs_nvidias_index(bare_python, tmp_path):
    """x86 with a GPU (nvidia-smi's STAND-IN on PATH: without one the doctor prescribes no
    TensorRT) and without libnvinfer: the fix is pip's tensorrt-cuXX, whose libraries come from
    NVIDIA's pip index; the fix says so beside the command (its `note`), so that a failed
    install behind a firewall is not a mystery, and names the offline way."""
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    shutil.copy(Path(__file__).parents[1] / "fixtures" / "cuda" / "nvidia-smi.standin",
                gpu / "nvidia-smi")  # fmt: skip
    (gpu / "nvidia-smi").chmod(0o755)
    with_a_gpu = environment(PATH=f"{gpu}{os.pathsep}{os.environ['PATH']}")
    done = piped("doctor", "--check", "libnvinfer", "--python", bare_python, "--json",
                 cwd=tmp_path, env=with_a_gpu)  # fmt: skip
    report = json.loads(done.stdout)
    (finding,) = [f for f in report["findings"] if f["check"] == "libnvinfer"]
    assert finding["remedy"].startswith(f"{bare_python} -m pip install tensorrt-cu")
    note = ("pip fetches TensorRT's -libs and -bindings wheels from NVIDIA's pip index: this "
            "host must reach it (where it cannot, a bundle made where it can brings them: "
            "docs/playbook.md, Offline fleets)")  # fmt: skip
    assert finding["remedy_note"] == note
    assert [fix["note"] for fix in report["fixes"]] == [note]
    text = piped("--no-color", "doctor", "--check", "libnvinfer", "--python", bare_python,
                 cwd=tmp_path, env=with_a_gpu).stdout  # fmt: skip
    assert f"   {note}" in text.splitlines()


MISSPELLED = (  # as typed; the usage it gets; the word meant
    (["doctor", "--enignes", "DIR"], "jetson-env doctor", "--engines"),
    (["provision", "--chek"], "jetson-env provision", "--check"),
    (["plan", "--to", "R36.5.0", "--inventroy=fleet.yml"], "jetson-env plan", "--inventory"),
    (["doctr"], "jetson-env", "doctor"),
    (["images", "lst"], "jetson-env images", "list"),
    # nearest a refused old spelling (bundle --python): offered its new one
    (["bundle", "out", "--x86", "--pyhton", "3.12"], "jetson-env bundle", "--python-version"),
)


@pytest.mark.parametrize(
    ("args", "usage", "nearest"), [pytest.param(*case, id=" ".join(case[0])) for case in MISSPELLED]
)
def test_a_misspelled_word_gets_its_commands_usage_and_the_nearest(args, usage, nearest, tmp_path):
    """A typo is refused (exit 2, nothing on stdout) by the command it was typed for: that
    command's usage, not the top level's, and the option or command meant."""
    done = piped(*args, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith(f"usage: {usage} ["), done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith(f"{usage}: error: "), last
    assert last.endswith(f"; did you mean {nearest}?"), last


HOST_COMMANDS = (["doctor"], ["plan", "--to", "R36.5.0"], ["provision"], ["bundle", "out"])


@pytest.mark.parametrize("command", HOST_COMMANDS, ids=" ".join)
def test_limit_and_forks_have_their_short_options_wherever_they_exist(command, tmp_path):
    """-l is --limit and -f is --forks in every command that takes -i, as in ansible-playbook:
    -l reaches Ansible's --limit (a pattern that matches no host is Ansible's error), -f is
    checked by one rule with one message, and --help says the same of each everywhere."""
    (tmp_path / "fleet.yml").write_text("all:\n  hosts:\n    one: {ansible_connection: local}\n")
    done = piped(*command, "-i", "fleet.yml", "-l", "nomatch", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "--limit leaves us with no hosts to target" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet.yml"]  # nothing made
    helped = piped(command[0], "--help", cwd=tmp_path).stdout
    assert "-l PATTERN, --limit PATTERN\n" in helped, helped
    assert "only these hosts of the inventory (Ansible's --limit)" in " ".join(helped.split())
    said = "downloads at once (default 4)" if command[0] == "bundle" else "hosts at once"
    assert f"-f N, --forks N       {said}" in helped, helped
    done = piped(*command, "-i", "fleet.yml", "-f", "0", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith(f"usage: jetson-env {command[0]} ["), done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"jetson-env {command[0]}: error: argument -f/--forks: must be a positive whole number, "
        "not '0'"
    )


RENAMED = (  # bundle's old spellings: the sentence that names the new one
    (["--x86", "--python", "3.11"], "--python is now --python-version X.Y: a bundle's targets "
     "are not here to run, so their Python is a version; --python names an interpreter to run, "
     "in doctor, plan, info and provision"),
    (["--jobs", "2"], '--jobs is now -f/--forks N: one word for "this many at once" in every '
     "command, as Ansible's"),
)  # fmt: skip


@pytest.mark.parametrize(("args", "sentence"), RENAMED, ids=[" ".join(a) for a, _ in RENAMED])
def test_bundles_old_spellings_are_refused_with_the_new_one(args, sentence, tmp_path):
    """--python is an interpreter to run in every command; bundle's targets' Python is a
    version (--python-version X.Y), and its parallelism is -f/--forks as elsewhere. The old
    spelling is refused before anything is made, with bundle's usage and the new word."""
    done = piped("bundle", "out", *args, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith("usage: jetson-env bundle ["), done.stderr
    assert done.stderr.splitlines()[-1] == f"jetson-env bundle: error: {sentence}"
    assert list(tmp_path.iterdir()) == []
    helped = " ".join(piped("bundle", "--help", cwd=tmp_path).stdout.split())
    assert "--python-version X.Y the targets' Python version" in helped, helped
    assert "--python " not in helped and "--jobs" not in helped
    wrong = piped("bundle", "out", "--x86", "--python-version", "3.x", cwd=tmp_path)
    assert wrong.returncode == 2 and list(tmp_path.iterdir()) == []
    assert "error: --python-version '3.x' is not a Python version like 3.12" in wrong.stderr


def test_which_roles_is_said_with_roles_in_every_command(tmp_path):
    """ "Which roles" is --roles ROLE[,ROLE] in doctor (with --fix), provision and bundle;
    provision's -t/--tags (ansible-playbook's) and doctor's --fix ROLE say the same thing:
    an unknown role is the same refusal whichever spelling named it."""
    for command in ("doctor", "provision", "bundle"):
        helped = piped(command, "--help", cwd=tmp_path).stdout
        assert "  --roles ROLE[,ROLE]" in helped, helped
    for spelling in (["--roles"], ["-t"], ["--tags"]):
        done = piped("provision", *spelling, "nosuch", cwd=tmp_path)
        assert done.returncode == 2
        assert done.stderr.startswith("error: --roles: no role nosuch in the playbook"), done.stderr
    refusals = {piped("doctor", "--quick", *spelling, cwd=tmp_path).stderr
                for spelling in (["--fix", "nosuch"], ["--fix", "--roles", "nosuch"])}  # fmt: skip
    (refusal,) = refusals
    assert refusal.startswith("error: no role nosuch in jetson_env.jetson.provision"), refusal
    alone = piped("doctor", "--roles", "torch", cwd=tmp_path)
    assert (alone.returncode, alone.stdout) == (2, "")
    assert alone.stderr.splitlines() == [
        "error: --roles chooses the roles that --fix applies: give --fix --roles torch"
    ]


def test_version_says_what_runs(tmp_path):
    """--version (before or after the command) names what a bug report needs: jetson-env and
    where it is installed, the collection it carries, the ansible-core provision would run,
    the day the matrix was last checked, and the Python; --json, anywhere on the line, the
    same as one document valid against docs/version.schema.json."""
    import importlib.metadata

    import jsonschema
    import yaml

    root = Path(__file__).parents[2]
    galaxy = yaml.safe_load((root / "ansible_collections/jetson_env/jetson/galaxy.yml").read_text())
    checked = yaml.safe_load((root / "jetson_env/data/matrix.yml").read_text())["checked"]
    core = importlib.metadata.version("ansible-core")
    import jetson_env

    package = Path(jetson_env.__file__).parent  # the package this venv imports (an editable one)
    # the Python that runs the console script: its first line's (pip writes python or python3)
    interpreter = Path(JETSON_ENV).read_text().splitlines()[0].removeprefix("#!").split()[0]
    said = piped("--version", cwd=tmp_path)
    assert said.returncode == 0 and said.stderr == "", said.stderr
    assert said.stdout.splitlines() == [
        f"jetson-env {importlib.metadata.version('jetson-env')} ({package.resolve()})",
        f"collection jetson_env.jetson {galaxy['version']}",
        f"ansible-core {core} ({VENV_BIN / 'ansible-playbook'})",
        f"version matrix checked {checked}",
        f"Python {'.'.join(map(str, sys.version_info[:3]))} ({interpreter})",
    ]
    assert piped("doctor", "--version", cwd=tmp_path).stdout == said.stdout
    schema = json.loads((root / "docs" / "version.schema.json").read_text())
    for args in (["--version", "--json"], ["doctor", "--json", "--version"]):
        data = json.loads(piped(*args, cwd=tmp_path).stdout)
        jsonschema.validate(data, schema)
        assert (data["ansible_core"], data["matrix_checked"]) == (core, checked)


@pytest.mark.parametrize("args", [["doctor", "--quick", "--check", "platform"], ["info"]],
                         ids=" ".join)  # fmt: skip
def test_a_locale_without_box_drawing_gets_ascii(args, tmp_path):
    """A Jetson's serial console under LC_ALL=C shows ASCII only, though Python writes UTF-8
    there (its UTF-8 mode): the tables' borders and the spinner's frames are ASCII on that
    terminal and in a pipe; a UTF-8 locale keeps the box drawing."""
    c_locale = {k: v for k, v in environment().items() if not k.startswith(("LC_", "LANG"))}
    code, said = on_a_pty([JETSON_ENV, *args], tmp_path, {**c_locale, "LC_ALL": "C"}, timeout=300)
    assert code in (0, 1), said[-2000:]
    assert "probing local" in said and "+----" in said, said[-2000:]
    assert said.isascii(), sorted({c for c in said if not c.isascii()})
    piped_c = subprocess.run([JETSON_ENV, *args], cwd=tmp_path, env={**c_locale, "LC_ALL": "C"},
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert "+----" in piped_c.stdout and piped_c.stdout.isascii(), piped_c.stdout
    code, utf8 = on_a_pty([JETSON_ENV, *args], tmp_path, {**c_locale, "LANG": "C.UTF-8"},
                          timeout=300)  # fmt: skip
    assert "┏━" in utf8, utf8[-2000:]


def completions(line: str, cwd: Path) -> list[str]:
    """What the console script answers the shell for `line` (argcomplete's protocol, as the
    function register-python-argcomplete installs asks it)."""
    answer = cwd / "completions.txt"
    env = {**environment(), "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(answer)}  # fmt: skip
    done = subprocess.run([JETSON_ENV], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return sorted(answer.read_text().split())


def test_the_shell_completes_commands_options_and_roles(tmp_path):
    """Shell completion (docs/completion.md, argcomplete as Ansible's): a command, an option
    (never a refused old spelling), and the playbook's roles after --roles, after a comma
    too; register-python-argcomplete's function names the console script."""
    assert completions("jetson-env doc", tmp_path) == ["doctor"]
    assert completions("jetson-env bundle --py", tmp_path) == ["--python-version"]
    assert completions("jetson-env bundle --jo", tmp_path) == []
    assert completions("jetson-env provision --roles torch,py", tmp_path) == [
        "torch,pycuda", "torch,python_base"]  # fmt: skip
    assert completions("jetson-env doctor --fix --roles cu", tmp_path) == ["cuda_env"]
    script = subprocess.run([str(VENV_BIN / "register-python-argcomplete"), "jetson-env"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "complete " in script and "jetson-env" in script


def test_an_unreachable_hosts_summary_says_where_it_stopped_not_nothing_to_change(tmp_path):
    """`provision -C -i` with a host nothing answers for (real ansible-playbook and ssh, a
    loopback port where nothing listens): its summary names the role and task where the host
    could not be reached; main said "jetson_facts: nothing to change" for it (its tasks that
    ran on the controller), as if the host had been checked."""
    (tmp_path / "inv.yml").write_text(
        "all:\n  hosts:\n    orin-a: {ansible_host: 127.0.0.1, ansible_port: 1}\n"
    )
    done = piped("--no-color", "provision", "-C", "-i", "inv.yml", cwd=tmp_path)
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout[done.stdout.index("Summary per host") :].splitlines()
    assert summary[1] == "orin-a: UNREACHABLE", summary
    facts = [line for line in summary if line.startswith("  jetson_facts: ")]
    assert facts == ["  jetson_facts: unreachable at Read the version of the Python Ansible "
                     "runs modules with, without a module"], summary  # fmt: skip
    assert "nothing to change" not in done.stdout, summary
    assert summary[-2].startswith("  never reached (the play stopped before them): "), summary
    as_json = json.loads(piped("provision", "-C", "-i", "inv.yml", "--json", cwd=tmp_path).stdout)
    (role,) = [r for r in as_json["hosts"]["orin-a"]["roles"] if r["role"] == "jetson_facts"]
    assert role["failed"] == [facts[0].split(" at ", 1)[1]], role


def test_a_refused_plan_says_why_once(tmp_path):
    """`plan --to R36.5.0` on this x86 machine: the table's line says why it is refused and
    where the releases are; no error line after it repeats the reason and the command."""
    done = piped("plan", "--to", "R36.5.0", cwd=tmp_path)
    assert done.returncode == 2
    said = done.stdout + done.stderr
    assert said.count("is for Jetsons only") == 1, said
    assert said.count("jetson-env matrix") == 1, said
