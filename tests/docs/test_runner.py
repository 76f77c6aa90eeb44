"""The doc runner itself, on documents written here: what runs, what fails (the negative
controls: a doctest whose output differs, a script that raises, a command that fails, a
server on every interface), what a server recipe gets, and what nothing outlives."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .blocks import all_units, blocks, units
from .catalogue import FOLDER, FREE_PORT, Server, Sub
from .listening import listeners
from .runner import DocRun, Outcome, Setting, interface_problem

FENCE = "```"


def doc(tmp_path: Path, body: str) -> Path:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True, exist_ok=True)
    (root / "README.md").write_text("# nothing to run\n")
    (root / "docs" / "page.md").write_text(body.replace("~~~", FENCE))
    return root


def outcomes(tmp_path: Path, body: str, setting: Setting | None = None) -> list[Outcome]:
    found = all_units(doc(tmp_path, body))
    run = DocRun(found, setting or Setting(), tmp_path / "run")
    try:
        return [run.outcome(unit, set()) for unit in found]
    finally:
        run.close()


def test_a_doctest_runs_and_one_with_other_output_fails(tmp_path: Path) -> None:
    good, bad = outcomes(tmp_path, "~~~python\n>>> 6 * 7\n42\n\n~~~\n\n"
                                   "~~~python\n>>> 6 * 7\n41\n\n~~~\n")
    assert good.ok
    assert not bad.ok and "Expected:\n    41\nGot:\n    42" in bad.output


def test_a_script_runs_and_one_that_raises_fails(tmp_path: Path) -> None:
    good, bad = outcomes(tmp_path, "~~~python\nimport radixkv\nprint(radixkv.__file__)\n~~~\n"
                                   "~~~python\nraise SystemExit('no ' + 'luck')\n~~~\n")
    assert good.ok and str(Path(__file__).parents[2] / "src") in good.output
    assert not bad.ok and "no luck" in bad.output


def test_each_command_of_a_sh_block_runs_and_a_failing_one_fails(tmp_path: Path) -> None:
    body = "~~~sh\n# a comment\necho one \\\n  two\nfalse   # fails\nradixkv --help\n~~~\n"
    first, second, third = outcomes(tmp_path, body)
    assert first.ok and "one two" in first.output
    assert not second.ok and second.output.startswith("exit 1")
    assert third.ok and "usage: radixkv" in third.output


def test_substitutions_and_files_reach_the_units(tmp_path: Path) -> None:
    setting = Setting(subs=(Sub("docs/page.md", "10.0.0.5", "127.0.0.1"),
                            Sub("docs/page.md", "tcp://*:5557", f"ipc://{FOLDER}/5557")),
                      env={"SECRET": "s3"},
                      files={"traces/t.jsonl": lambda path: _write(path, "{}\n")})
    (outcome,) = outcomes(tmp_path, "~~~sh\necho 10.0.0.5 tcp://*:5557 $SECRET "
                                    "$(cat traces/t.jsonl)\n~~~\n", setting)
    assert outcome.ok
    assert f"127.0.0.1 ipc://{tmp_path / 'run'}/5557 s3 {{}}" in outcome.output


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


SERVE = ("python -c \"import sys, http.server as h; h.HTTPServer(('127.0.0.1', int(sys.argv[2])),"
         " h.SimpleHTTPRequestHandler).serve_forever()\" --port 8123")


def test_a_server_serves_the_later_units_on_its_own_address_and_is_stopped(
        tmp_path: Path) -> None:
    setting = Setting(subs=(Sub("docs/page.md", "8123", FREE_PORT),),
                      servers=(Server("python -c"),))
    body = (f"~~~sh\n{SERVE}\n~~~\n"
            "~~~python\nfrom urllib.request import urlopen\n"
            "print(urlopen('http://127.0.0.1:8123/').status)\n~~~\n")
    server_unit, client_unit = found = all_units(doc(tmp_path, body))
    run = DocRun(found, setting, tmp_path / "run")
    server = run.outcome(server_unit, set())
    (process,) = run.servers
    assert server.ok and "ready, listening on [('127.0.0.1'," in server.output
    client = run.outcome(client_unit, set())
    assert client.ok and "200" in client.output
    assert run.servers == [] and process.poll() is not None  # the last unit ran: stopped
    assert not _alive(process.pid)


def test_a_server_that_exits_at_once_is_reported(tmp_path: Path) -> None:
    setting = Setting(servers=(Server("python -c"),))
    (outcome,) = outcomes(tmp_path, "~~~sh\npython -c 'raise SystemExit(3)' --port 1\n~~~\n",
                          setting)
    assert not outcome.ok and "the server exited (3)" in outcome.output


def test_every_interface_is_refused_but_where_the_catalogue_allows_it() -> None:
    ports = {"--port": 6000, "--rpc_port": 6001}
    mine = [("127.0.0.1", 6000), ("127.0.0.1", 6001)]
    assert interface_problem(mine, ports, Server("x")) is None
    everywhere = [("0.0.0.0", 6000), ("127.0.0.1", 6001)]
    assert "every interface" in str(interface_problem(everywhere, ports, Server("x")))
    assert interface_problem(everywhere, ports, Server("x", everywhere=("--port",))) is None
    picked = [*mine, ("::", 7000)]
    assert "every interface" in str(interface_problem(picked, ports, Server("x")))
    assert interface_problem(picked, ports, Server("x", own_ports_everywhere=True)) is None
    assert "not all among" in str(interface_problem(mine[:1], ports, Server("x")))


def test_proc_tables_are_read_with_their_addresses_and_ports() -> None:
    table = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt"
             "   uid  timeout inode\n"
             "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000"
             "     0        0 111 1 0 100 0 0 10 0\n"
             "   1: 00000000:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000"
             "     0        0 222 1 0 100 0 0 10 0\n"
             "   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000"
             "     0        0 333 1 0 100 0 0 10 0\n")
    assert listeners(table) == {"111": ("127.0.0.1", 8080), "222": ("0.0.0.0", 6379)}


def test_nothing_a_unit_started_outlives_it(tmp_path: Path) -> None:
    body = ("~~~python\nimport subprocess\n"
            "print('child', subprocess.Popen(['sleep', '600']).pid)\n~~~\n")
    (outcome,) = outcomes(tmp_path, body)
    assert outcome.ok
    child = int(outcome.output.split("child ")[1].split()[0])
    deadline = time.monotonic() + 60  # a hang guard only: the kill was sent already
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_blocks_of_no_runnable_language_fail_and_diagrams_are_left_alone(
        tmp_path: Path) -> None:
    root = doc(tmp_path, "~~~\na diagram\n~~~\n~~~text\nsample output\n~~~\n")
    assert all_units(root) == []
    path = root / "docs" / "page.md"
    path.write_text("~~~console\n$ ls\n~~~\n".replace("~~~", FENCE))
    with pytest.raises(ValueError, match="no runner for ```console"):
        units(blocks(path, root)[0])
    path.write_text("~~~sh\necho 'open\n~~~\n".replace("~~~", FENCE))
    with pytest.raises(ValueError, match="continued past the block's end"):
        units(blocks(path, root)[0])
