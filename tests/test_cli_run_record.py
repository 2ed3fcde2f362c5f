"""The run record keeps what the terminal said: every warning printed while a run is made (a
loader's, a skipped file, a setting outside its range) is in ``report.md`` and ``run.json``;
an interrupted write leaves a folder that says it is unfinished, which ``show`` and ``diff``
refuse; and small usage helps (a misspelt config key)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from ctxlab.cli.main import main

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "transcripts"
KIMI = SHARED / "incoming" / "kimi-cli" / "531d195b-6436-426e-b010-4bf723a992de.jsonl"
KATY = SHARED / "raw" / "swe-agent" / "trajectories" / "demonstrations" / "ctf" / "crypto" / "katy.traj"
EMPTY_GEMINI = SHARED / "incoming" / "gemini-cli-empty" / "entire-cli_ec-38b74f08e3_2_full.jsonl"


def _run(*args: str) -> int:
    return main([*args, "--no-progress", "--figures", "none"])


def test_load_and_setting_warnings_reach_report_and_run_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "kimi_cut.jsonl").write_bytes(KIMI.read_bytes()[:40000])  # cut inside line 82
    shutil.copy(KATY, folder / "katy.traj")
    (folder / "notes.csv").write_text("a,b\n", encoding="utf-8")  # not a transcript: skipped, listed
    out = tmp_path / "out"
    code = _run("replay", str(folder), "--out", str(out), "--summary-threshold", "16")
    code_ratio = _run(
        "replay", str(folder), "--out", str(tmp_path / "r"), "--summary-l2-trigger-ratio", "1.5"
    )
    err = capsys.readouterr().err
    assert (code, code_ratio) == (0, 0), err
    assert "kimi_cut.jsonl: line 82: cut off mid-line" in err
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["problems"] == []  # warnings are not failures
    cut = [w for w in record["warnings"] if w["where"] == "line 82"]
    assert [(w["kind"], w["source"]) for w in cut] == [("load", str(folder / "kimi_cut.jsonl"))]
    assert (
        "cut off mid-line" in cut[0]["message"] and "81 complete line(s) before it kept" in cut[0]["message"]
    )
    skipped = [w for w in record["warnings"] if w["source"] == str(folder / "notes.csv")]
    assert len(skipped) == 1 and skipped[0]["message"].endswith(
        "skipped: not a transcript (.csv file): skipped"
    )
    report = (out / "report.md").read_text(encoding="utf-8")
    section = report.split("## Errors and skipped files", 1)[1].split("\n## ", 1)[0]
    assert "None." not in section
    assert f"- file: `{folder / 'kimi_cut.jsonl'}: line 82: cut off mid-line" in section
    assert "notes.csv" in section
    assert "warning(s): see [Errors and skipped files]" in report.split("## Settings")[0]
    ratio = json.loads((tmp_path / "r" / "run.json").read_text(encoding="utf-8"))["warnings"]
    assert {"kind": "setting", "source": "summary_l2_trigger_ratio", "where": "", "transcript": None,
            "strategy": None,
            "message": "summary_l2_trigger_ratio: 1.5 is outside the recommended range 0.1-1.0"} in ratio  # fmt: skip
    ratio_report = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert (
        "- setting: `summary_l2_trigger_ratio: 1.5 is outside the recommended range 0.1-1.0`" in ratio_report
    )


def test_a_clean_run_records_no_warning(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _run("replay", str(KATY), "--out", str(out)) == 0
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["warnings"] == [] and record["problems"] == []
    section = (out / "report.md").read_text(encoding="utf-8").split("## Errors and skipped files", 1)[1]
    assert section.split("\n## ", 1)[0].strip() == "None."


def test_ctrl_c_while_writing_leaves_a_folder_that_says_so_and_resume_finishes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctxlab.analysis.run_record as run_record

    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(KATY, folder / "katy.traj")
    shutil.copy(SHARED / "raw" / "swe-agent" / "trajectories" / "demonstrations" / "ctf" / "crypto" / "katy.traj",
                folder / "katy2.traj")  # fmt: skip
    out, done = tmp_path / "out", tmp_path / "done"
    args = ["compare", str(folder), "--strategies", "ars,masking", "--summary-threshold", "4"]
    assert _run(*args, "--out", str(done)) == 0
    real = run_record.write_run_json

    def interrupted(*_: object) -> Path:
        raise KeyboardInterrupt  # Ctrl-C after calls.parquet, summary.csv and report.md

    monkeypatch.setattr(run_record, "write_run_json", interrupted)
    capsys.readouterr()
    assert _run(*args, "--out", str(out)) == 130
    err = capsys.readouterr().err
    stage = out / ".ctxlab-staging"
    assert (
        (out / "calls.parquet").is_file()
        and (out / "report.md").is_file()
        and not (out / "run.json").exists()
    )
    assert (out / ".ctxlab-incomplete").is_file()
    assert f"stopped while writing the outputs: {out} is not a finished run" in err
    assert (
        f"the 4 finished run(s) are kept in {stage}: the same command with --resume writes the outputs" in err
    )
    assert err.rstrip().endswith("ctxlab: interrupted")
    assert len(list((stage / "runs").rglob("*.pickle"))) == 4 and (stage / "views").is_dir()
    monkeypatch.setattr(run_record, "write_run_json", real)

    assert main(["show", str(out)]) == 1
    err = capsys.readouterr().err
    assert (
        f"ctxlab: error: {out}: not a finished run: its outputs were being written when ctxlab stopped" in err
    )
    assert "no run.json" in err and not (out / "inspect.html").exists()
    assert main(["diff", str(out), str(done), "--out", str(tmp_path / "d")]) == 1
    err = capsys.readouterr().err
    assert f"{out}: not a finished run" in err and not (tmp_path / "d").exists()

    assert _run(*args, "--out", str(out), "--resume") == 0
    err = capsys.readouterr().err
    assert f"ctxlab: --resume: 4 finished run(s) in {stage}: reused if they were made" in err
    assert not (out / ".ctxlab-incomplete").exists() and not stage.exists()
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["replayed"] == 4
    views = sorted(p.relative_to(out) for p in (out / "views").rglob("*.gz"))
    assert views == sorted(p.relative_to(done) for p in (done / "views").rglob("*.gz")) and len(views) == 4
    assert main(["show", str(out)]) == 0


def test_a_folder_without_run_json_is_refused_by_diff_and_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert _run("replay", str(KATY), "--out", str(run)) == 0
    (run / "run.json").unlink()  # e.g. a folder copied before its writing ended
    assert main(["diff", str(run), str(run), "--out", str(tmp_path / "d")]) == 1
    assert main(["show", str(run)]) == 1
    err = capsys.readouterr().err
    assert err.count(f"ctxlab: error: {run}: not a run folder (no run.json;") == 2


def test_resume_without_a_checkpoint_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert _run("replay", str(KATY), "--out", str(out), "--resume") == 0
    err = capsys.readouterr().err
    assert (
        f"ctxlab: --resume: no checkpoint in {out / '.ctxlab-staging'}" in err
        and "replaying every run" in err
    )
    assert (out / "run.json").is_file()


def test_ctrl_c_while_replaying_says_what_was_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctxlab.replay.resume as resume

    real, calls = resume.RunStore.save, []

    def save_then_stop(self: object, *a: object, **k: object) -> None:
        real(self, *a, **k)  # type: ignore[arg-type]
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(resume.RunStore, "save", save_then_stop)
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(3):
        shutil.copy(KATY, folder / f"katy{i}.traj")
    out = tmp_path / "out"
    assert _run("replay", str(folder), "--out", str(out)) == 130
    err = capsys.readouterr().err
    assert (
        f"stopped while replaying: 2 finished run(s) are kept in {out / '.ctxlab-staging'} (of about 3;"
        in err
    )
    assert "--resume replays only the others" in err
    assert sorted(p.name for p in out.iterdir()) == [".ctxlab-staging"]


@pytest.mark.parametrize(
    ("name", "text", "typo", "meant"),
    [
        ("c.toml", "[settings]\nsummary_keep_mesages = 5\n", "summary_keep_mesages", "summary_keep_messages"),
        ("c.json", '{"summary-treshold": 4}', "summary_treshold", "summary_threshold"),
    ],
)
def test_a_misspelt_config_key_gets_the_field_it_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, typo: str, meant: str
) -> None:
    config = tmp_path / name
    config.write_text(text, encoding="utf-8")
    assert main(["replay", str(KATY), "--config", str(config), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"ctxlab: error: invalid setting: --config {config}: unknown key {typo!r} ")
    assert f"(did you mean {meant!r}?); known: summary_threshold, summary_keep_messages" in err  # one name
    assert not (tmp_path / "o").exists()


def test_a_bad_value_in_a_config_file_names_the_file_and_a_section_says_the_file_is_flat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """s39 trial: ``summary_threshold = "16"`` in a file said only "summary_threshold='16' is
    invalid", and an ``[ars]`` section only "unknown key 'ars'". A flag that overrides the value
    is what was invalid then, not the file."""
    config = tmp_path / "settings.toml"
    config.write_text('summary_threshold = "16"\n', encoding="utf-8")
    assert main(["replay", str(KATY), "--config", str(config), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        f"ctxlab: error: invalid setting: --config {config}: summary_threshold='16' is invalid"
    )
    config.write_text("summary_threshold = 16\n", encoding="utf-8")
    assert (
        main(
            [
                "replay",
                str(KATY),
                "--config",
                str(config),
                "--summary-threshold",
                "-1",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("ctxlab: error: invalid setting: summary_threshold=-1") and str(config) not in err
    config.write_text("[ars]\nsummary_threshold = 16\n", encoding="utf-8")
    assert main(["replay", str(KATY), "--config", str(config), "--out", str(tmp_path / "o")]) == 2
    assert (
        "unknown key 'ars' (the file is flat: the setting fields at its top level, no sections)"
        in capsys.readouterr().err
    )
    assert not (tmp_path / "o").exists()


def test_token_differences_print_as_whole_tokens() -> None:
    from ctxlab.replay.diff import format_value

    assert [format_value(v, "sent_tokens_total") for v in (0.0, -0.3, 3724.4, -7448.0)] == [
        "+0",
        "+0",
        "+3,724",
        "-7,448",
    ]
    assert format_value(12.5, "sent_tokens_total", signed=False) == "12"  # round half to even
    assert format_value(0.25, "failures") == "+0.250"  # not tokens: as before


def test_diff_writes_beside_run_b_named_after_both_and_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    for name, threshold in (("t4", "4"), ("t8", "8")):
        args = ["compare", str(KATY), "--strategies", "ars,masking", "--summary-threshold", threshold]
        assert _run(*args, "--out", str(runs / name)) == 0
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["diff", str(runs / "t4"), str(runs / "t8"), "--no-figure"]) == 0
    out = capsys.readouterr().out
    target = runs / "diff_t4_vs_t8"
    assert f"written to {target}: diff.md, diff.csv" in " ".join(out.split())
    assert not (tmp_path / "out").exists() and (target / "diff.md").is_file()
    md = (target / "diff.md").read_text(encoding="utf-8")
    assert "| settings.l2_threshold_tokens | 1,638 | 3,277 | differs |" in md  # T2 as the report prints it
    assert "| settings.entry_threshold_tokens | 4,096 | 8,192 | differs |" in md
    import re

    tokens = next(line for line in md.splitlines() if line.startswith("- ars ("))
    # whole tokens; one run: no interval, the verdict says why (s40 trial: "CI +x to +x" from 1 run)
    assert re.search(r"tokens [+-][\d,]+: too few runs to call \(1 < 6\)", tokens), tokens
    assert main(["diff", str(runs / "t4"), str(runs / "t8"), "--no-figure"]) == 0
    assert "(replacing the diff written there before)" in " ".join(capsys.readouterr().out.split())


def test_an_empty_session_in_a_folder_is_skipped_and_listed_a_broken_file_still_stops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(EMPTY_GEMINI, folder / "empty_gemini.jsonl")
    shutil.copy(KATY, folder / "katy.traj")
    out = tmp_path / "out"
    assert _run("replay", str(folder), "--out", str(out)) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "skipped 1 file(s) that are not transcripts: empty_gemini.jsonl" in err
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["problems"] == [] and record["replayed"] == 1
    [skipped] = [w for w in record["warnings"] if w["source"] == str(folder / "empty_gemini.jsonl")]
    assert (
        "skipped: no conversation: the gemini_cli file records no user or model message" in skipped["message"]
    )
    section = (out / "report.md").read_text(encoding="utf-8").split("## Errors and skipped files", 1)[1]
    assert f"- file: `{folder / 'empty_gemini.jsonl'}: skipped: no conversation" in section
    # a broken file of a known format is still a failure, named with its place
    (folder / "broken.traj").write_text(KATY.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    assert _run("replay", str(folder), "--out", str(tmp_path / "o2")) == 1
    err = capsys.readouterr().err
    assert (
        f"ctxlab: error: {folder / 'broken.traj'}: line " in err and "--keep-going replays the others" in err
    )
    assert not (tmp_path / "o2").exists()
    # a folder holding only the empty session names it in the "no transcripts" failure
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(EMPTY_GEMINI, alone / "empty_gemini.jsonl")
    assert _run("replay", str(alone), "--out", str(tmp_path / "o3")) == 1
    err = capsys.readouterr().err
    assert f"no transcripts found under {alone} (only 1 skipped file(s), named in the warning)" in err


WARNS_ON_EVENT = (
    "import warnings\n"
    "from ctxlab.core.hookspecs import hookimpl\n\n"
    "@hookimpl\n"
    "def ctxlab_on_event(event):\n"
    "    warnings.warn('event sink offline: ' + str(event.get('type')), UserWarning)\n"
)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_warning_raised_while_replaying_reaches_run_json_and_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], jobs: str
) -> None:
    """A warning raised during the replay itself (here a plugin's, from its event observer; in
    practice also the middleware's "conversation history not saved") is recorded per run, naming
    the transcript and the strategy, also from worker processes (``--jobs 2``), and still shown."""
    plug = tmp_path / "plug"
    plug.mkdir()
    (plug / "warns.py").write_text(WARNS_ON_EVENT, encoding="utf-8")
    out = tmp_path / "o"
    # serially the warning is shown again in this process; a worker shows it on its own stderr
    shown = (
        pytest.warns(UserWarning, match="event sink offline") if jobs == "1" else warnings.catch_warnings()
    )
    with shown:
        warnings.simplefilter("always")
        code = _run(
            "replay",
            str(KATY),
            "--plugins-dir",
            str(plug),
            "--summary-threshold",
            "2",
            "--jobs",
            jobs,
            "--out",
            str(out),
        )
    assert code == 0
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    said = [w for w in record["warnings"] if w["kind"] == "run"]
    assert said and all(w["transcript"] and w["strategy"] for w in said)
    first = said[0]
    assert first["transcript"] == "katy.traj" and first["strategy"] == "ars"
    assert first["message"].startswith("katy.traj [ars]: UserWarning: event sink offline")
    assert len({w["message"] for w in said}) == len(said)  # one per distinct text and run
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"- run: `{first['message']}`" in report
    assert record["problems"] == []  # a warning is not a failure


def test_a_custom_prompt_the_summarizer_does_not_read_is_said_in_the_settings(tmp_path: Path) -> None:
    # s40 trial item 11: --summary-prompt-file with the offline StructuredSummarizer was listed in
    # the Settings table as if used; the table now says the summarizer in use does not read it,
    # and the summary follows the custom prompt's language (summary_language auto), as documented
    rag = SHARED / "raw" / "deer-flow" / "web" / "public" / "replay" / "rag.txt"  # a Chinese run
    prompt = tmp_path / "prompt.txt"
    prompt.write_text('Summarize this {messages} as JSON like {"task": "..."}', encoding="utf-8")
    out = tmp_path / "out"
    assert (
        _run(
            "replay",
            str(rag),
            "--summary-threshold",
            "8",
            "--summary-prompt-file",
            str(prompt),
            "--out",
            str(out),
        )
        == 0
    )
    report = (out / "report.md").read_text(encoding="utf-8")
    (row,) = [line for line in report.splitlines() if line.startswith("| `summary_prompt` |")]
    assert (
        "**not read** by the summarizer in use: StructuredSummarizer (offline stand-in, not a model) (ars)"
        in row
    )
    assert "summary_language auto follows a custom prompt's language" in row
    summaries = [
        json.loads(line) for line in (out / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert summaries and all("[Context summary]" in s["text"] for s in summaries)  # the prompt's language
    # the built-in template: nothing to say, and the summary follows the user's (Chinese) messages
    plain = tmp_path / "plain"
    assert _run("replay", str(rag), "--summary-threshold", "8", "--out", str(plain)) == 0
    report = (plain / "report.md").read_text(encoding="utf-8")
    assert "| `summary_prompt` | the built-in template of the summary language |" in report
    summaries = [
        json.loads(line) for line in (plain / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert summaries and all("[上下文摘要]" in s["text"] for s in summaries)
