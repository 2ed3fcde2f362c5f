"""A real browser runs a notebook in JupyterLab: figures render, the explorer's slider redraws.

JupyterLab is started headless on a loopback port (``--allow-root`` when running as root, a random
token, its own config, data, runtime and settings folders), with ``MPLBACKEND=Agg`` as in CI.
Debian's ``chromium``, driven by Selenium through Debian's ``chromedriver`` (no browser or driver
is downloaded), opens a small notebook written for this test (the bundled sample transcript: a
budget figure and the explorer widget), runs it with *Run > Run All Cells*, and checks that:

* the figure cell's output is an ``<img>`` holding a PNG that the browser decoded;
* the explorer draws its chart in place (an image widget), and dragging its
  ``summary_threshold`` slider replays the run and redraws it: the image bytes change.

Screenshots are kept in ``out/test-artifacts/browser/`` (their paths are printed), with the
server's and the driver's logs.  Without chromium, chromedriver or selenium the test is skipped
on a developer's machine and FAILS under ``CI=true`` (``.ci/run`` installs them).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "out" / "test-artifacts" / "browser"
IN_CI = os.environ.get("CI") == "true"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROME_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1200",
]
NOTEBOOK = "explorer_smoke.ipynb"
CALLS = 60  # model calls of the bundled sample replayed (the first L1 rounds are in them)
pytestmark = pytest.mark.slow


def _missing(what: str) -> None:
    """Skip on a developer's machine; fail in CI, where .ci/run must have installed it."""
    message = f"{what} is missing (Debian: apt-get install chromium chromium-driver; PyPI: selenium)"
    if IN_CI:
        pytest.fail(f"CI=true: {message}")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Browser check: a figure and the explorer"),
        nbformat.v4.new_code_cell(
            "from ctxlab.analysis.plotting import budget_figure\n"
            "from ctxlab.replay import replay\n"
            "from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT\n\n"
            f'calls = replay(SAMPLE_TRANSCRIPT, "ars", limit_calls={CALLS}).frame()\n'
            f'fig = budget_figure(calls, title="bundled sample, first {CALLS} calls (ARS defaults)")\n'
            "fig"
        ),
        nbformat.v4.new_code_cell(
            "from ctxlab.analysis.widgets import explore\n\n"
            f'explorer = explore([SAMPLE_TRANSCRIPT], ["ars"], limit_calls={CALLS})\n'
            "explorer"
        ),
    ]
    nbformat.write(nb, path)


def _wait(what: str, check: Callable[[], Any], timeout: float, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as exc:  # a stale element or a page still loading: try again
            last = exc
        time.sleep(every)
    raise AssertionError(
        f"timed out after {timeout:.0f} s waiting for {what}" + (f" (last error: {last})" if last else "")
    )


@pytest.fixture(scope="module")
def jupyter_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A JupyterLab server on 127.0.0.1 serving a temporary folder with :data:`NOTEBOOK`;
    stopped (with its kernels) at the end."""
    home = tmp_path_factory.mktemp("jupyterlab")
    root = home / "root"
    root.mkdir()
    _write_notebook(root / NOTEBOOK)
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # no news or update checks (no network), no toasts over the page
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True})
    )
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "MPLBACKEND": "Agg",
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "IPYTHONDIR": str(home / "ipython"),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    cmd = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log_path = ARTIFACTS / "jupyterlab.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"JupyterLab exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}"
                )
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                return bool(r.status == 200)

        try:
            _wait("JupyterLab to answer", up, timeout=90)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{log_path.read_text()[-3000:]}") from None
        yield {"base": base, "token": token, "log": log_path}
    finally:
        proc.terminate()  # the server shuts its kernels down on SIGTERM
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):  # anything of this session left (a kernel)
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Debian chromium driven by Debian's chromedriver through Selenium."""
    for path, what in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromedriver")):
        if not Path(path).is_file():
            _missing(f"{what} ({path})")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("the selenium package")
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not download anything
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*CHROME_FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    service = Service(executable_path=CHROMEDRIVER, log_output=str(ARTIFACTS / "chromedriver.log"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


#: SHA-256 (hex) of the bytes behind an <img>'s src (a data: or blob: URL), computed in the page
_IMAGE_HASH_JS = """
const [img, done] = arguments;
fetch(img.src).then(r => r.arrayBuffer()).then(b => crypto.subtle.digest('SHA-256', b))
  .then(d => done(Array.from(new Uint8Array(d)).map(x => x.toString(16).padStart(2, '0')).join('')))
  .catch(e => done('error: ' + e));
"""


def _screenshot(driver: Any, name: str) -> Path:
    path = ARTIFACTS / name
    driver.save_screenshot(str(path))
    print(f"screenshot: {path}")
    return path


def test_notebook_runs_in_chromium_and_the_explorer_redraws(
    jupyter_lab: dict[str, Any], browser: Any
) -> None:
    try:
        _run_notebook_and_move_the_slider(jupyter_lab, browser)
    except BaseException:
        _screenshot(browser, "failure.png")
        (ARTIFACTS / "failure.html").write_text(browser.page_source, encoding="utf-8")
        raise


def _run_notebook_and_move_the_slider(jupyter_lab: dict[str, Any], driver: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    driver.get(f"{jupyter_lab['base']}/lab/tree/{NOTEBOOK}?token={jupyter_lab['token']}")
    idle = ".jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status='idle']"
    # the status bar names the kernel once the session is connected ("Python 3 (ipykernel) | Idle")
    kernel_idle = "//div[contains(@class,'jp-StatusBar-Widget')]//*[contains(text(),'ipykernel) | Idle')]"
    _wait("the notebook and its kernel", lambda: driver.find_elements(By.XPATH, kernel_idle), timeout=90)

    # Run > Run All Cells, through the menu bar as a person would
    run_menu = driver.find_element(
        By.XPATH, "//div[contains(@class,'lm-MenuBar-itemLabel') and text()='Run']"
    )
    run_menu.click()
    _wait(
        "the Run menu",
        lambda: driver.find_element(
            By.XPATH,
            "//li[contains(@class,'lm-Menu-item')][.//div[contains(@class,'lm-Menu-itemLabel') "
            "and text()='Run All Cells']]",
        ),
        timeout=10,
    ).click()
    # had the session not been ready, JupyterLab would ask for a kernel: accept its choice
    time.sleep(1)
    for dialog in driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog"):
        if "Select Kernel" in dialog.text:
            dialog.find_element(By.CSS_SELECTOR, "button.jp-mod-accept").click()

    outputs = ".jp-NotebookPanel .jp-OutputArea-output"
    figure = _wait(
        "the figure cell's <img>",
        lambda: [
            i
            for i in driver.find_elements(By.CSS_SELECTOR, f"{outputs} img")
            if (i.get_attribute("src") or "").startswith("data:image/png")
        ],
        timeout=120,
    )[0]
    assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", figure) > 300
    chart = _wait(
        "the explorer's chart",
        lambda: driver.find_elements(By.CSS_SELECTOR, f"{outputs} img.widget-image"),
        180,
    )[0]
    _wait(
        "the explorer's first drawing",
        lambda: driver.execute_script("return arguments[0].naturalWidth", chart),
        60,
    )
    _wait("the kernel to finish", lambda: driver.find_elements(By.CSS_SELECTOR, idle), timeout=120)
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", figure)
    _screenshot(driver, "01-run-all-figure.png")
    before = driver.execute_async_script(_IMAGE_HASH_JS, chart)
    assert len(before) == 64, before

    # drag the summary_threshold handle from 100 K towards 40 K tokens
    slider = driver.find_element(
        By.XPATH,
        "//div[contains(@class,'widget-hslider')][.//label[contains(., 'summary_threshold')]]",
    )
    readout = slider.find_element(By.CSS_SELECTOR, ".widget-readout")
    assert readout.text.strip() == "100"
    track = slider.find_element(By.CSS_SELECTOR, ".noUi-target")
    handle = slider.find_element(By.CSS_SELECTOR, ".noUi-handle")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", track)
    offset = round((40 - 100) / 200 * track.size["width"])
    ActionChains(driver).click_and_hold(handle).pause(0.2).move_by_offset(offset, 0).pause(
        0.2
    ).release().perform()
    moved = float(readout.text.strip())
    assert 20 <= moved <= 60, f"the slider reads {moved} after dragging {offset} px"

    after = _wait(
        "the explorer to redraw its chart",
        lambda: (
            h
            if (h := driver.execute_async_script(_IMAGE_HASH_JS, chart)) != before and len(h) == 64
            else None
        ),
        timeout=120,
    )
    assert after != before
    message = driver.find_elements(By.XPATH, "//*[contains(@class,'widget-html')]//b[text()='error']")
    assert not message, "the explorer shows an error"
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", slider)
    shot = _screenshot(driver, "02-slider-redrawn.png")
    assert shot.stat().st_size > 20_000


def test_a_missing_browser_fails_in_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under CI=true a missing chromium, chromedriver or selenium is a failure, not a skip."""
    monkeypatch.setattr(sys.modules[__name__], "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        _missing("chromium")
    monkeypatch.setattr(sys.modules[__name__], "IN_CI", False)
    with pytest.raises(pytest.skip.Exception):
        _missing("chromium")


def test_the_call_inspector_of_make_demo_shows_call_42_in_chromium(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``make demo``'s command (``ctxlab replay --out DIR``) then ``ctxlab show DIR``: the index
    opens from the file (no server), its run opens the run page, a click on call 42 shows its raw
    and sent views side by side, and the run's summary text is on the page."""
    from selenium.webdriver.common.by import By

    out = tmp_path_factory.mktemp("demo") / "demo"
    ctxlab = [sys.executable, "-m", "ctxlab"]
    subprocess.run([*ctxlab, "replay", "--out", str(out)], check=True, capture_output=True, timeout=600)
    shown = subprocess.run([*ctxlab, "show", str(out)], check=True, capture_output=True, text=True)
    page = out / "inspect.html"
    assert str(page) in shown.stdout
    import polars as pl

    ars = pl.read_parquet(out / "calls.parquet").filter(pl.col("strategy") == "ars")
    rows = {r["call_index"]: r for r in ars.iter_rows(named=True)}
    first_l2 = min(i for i, r in rows.items() if r["level"] == "L2")
    try:
        browser.get(page.as_uri())
        _wait("the index", lambda: browser.execute_script("return document.body.dataset.ready"), timeout=30)
        browser.find_element(By.CSS_SELECTOR, "#runs-body a.open").click()
        _wait(
            "the run page", lambda: browser.execute_script("return document.body.dataset.ready"), timeout=30
        )
        assert browser.find_element(By.ID, "title").text == "sample_run.json [ars]"
        _wait("the call strip", lambda: browser.find_elements(By.CSS_SELECTOR, "#call-strip a"), timeout=30)
        link = browser.find_element(By.CSS_SELECTOR, "#call-strip a[data-call='42']")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
        link.click()
        _wait("call 42", lambda: "call 42 of 225" in browser.find_element(By.ID, "call-info").text, 10)
        current = browser.find_element(By.CSS_SELECTOR, "#call-strip a.current")  # the strip is redrawn
        assert current.get_attribute("data-call") == "42"
        raw = browser.find_elements(By.CSS_SELECTOR, "#raw-view .msg")
        sent = browser.find_elements(By.CSS_SELECTOR, "#sent-view .msg")
        # the recorded history before call 42 (plus the system message), and at call 42 (below T)
        # ARS sends it whole: every message kept, raw and sent alike
        assert len(raw) == len(sent) == 1 + 90
        assert all(m.is_displayed() for m in (raw[0], sent[0]))
        assert {m.get_attribute("data-mark") for m in sent} == {"kept"}
        assert raw[1].find_element(By.TAG_NAME, "pre").text == sent[1].find_element(By.TAG_NAME, "pre").text
        tokens = browser.find_element(By.ID, "sent-total").text
        assert tokens.startswith(f"{rows[42]['view_tokens']:,} tokens, 90 messages"), tokens
        summary = browser.find_element(By.CSS_SELECTOR, "#summaries .summary-text")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", summary)
        assert summary.is_displayed() and summary.text.startswith("[Context summary]")
        assert "Task:" in summary.text and "Files touched:" in summary.text
        browser.execute_script("window.scrollTo(0, 0)")
        shot = _screenshot(browser, "03-inspector-call-42.png")
        assert shot.stat().st_size > 20_000

        # the L2 call: the summary message leads the sent view, the raw view marks what it replaced
        browser.find_element(By.CSS_SELECTOR, f"#call-strip a[data-call='{first_l2}']").click()
        _wait(
            "the L2 call", lambda: f"call {first_l2} of" in browser.find_element(By.ID, "call-info").text, 10
        )
        marks = [
            m.get_attribute("data-mark") for m in browser.find_elements(By.CSS_SELECTOR, "#sent-view .msg")
        ]
        assert marks[1] == "summary" and "offloaded" in marks
        raw_marks = [
            m.get_attribute("data-mark") for m in browser.find_elements(By.CSS_SELECTOR, "#raw-view .msg")
        ]
        assert raw_marks.count("summarized") > 200
        link = browser.find_element(By.CSS_SELECTOR, "#sent-view .msg[data-mark='offloaded'] a.file")
        assert (out / link.get_attribute("href").removeprefix(out.as_uri() + "/")).is_file()
        _screenshot(browser, "04-inspector-first-l2-call.png")
    except BaseException:
        _screenshot(browser, "inspector-failure.png")
        raise
