"""A real headless browser for integration tests: Debian's ``chromium`` driven through
its own ``chromedriver`` by Selenium (Selenium Manager cannot download drivers here, so
the system driver is always used), and Flower run as a subprocess next to the workers.

Tests that need the browser skip, with the apt packages to install, where it is missing
(``.ci/run`` installs them, so CI always runs those tests)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import cast

from waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / ".memq" / "screenshots"
APT_PACKAGES = "chromium chromium-driver"


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    missing = [name for name in ("chromium", "chromedriver") if shutil.which(name) is None]
    if missing:
        return f"no headless browser ({', '.join(missing)} not on PATH): apt-get install -y {APT_PACKAGES}"
    try:
        import selenium  # noqa: F401 - imported only to learn whether it is installed
    except ImportError:
        return "selenium is not installed: pip install -e '.[dev]'"
    return None


def basic_auth_header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@contextlib.contextmanager
def chromium(
    authorization: str | None = None, width: int = 1440, height: int = 1000, logs: Mapping[str, str] | None = None
) -> Iterator:
    """A headless Chromium session; ``authorization`` is sent as the Authorization header
    with every request the page makes (navigation, XHR, POST), through the DevTools
    protocol, which is how the browser logs in to an HTTP basic-auth site without a
    dialog. ``logs`` are the logs chromedriver keeps, read with ``driver.get_log(name)``
    (``goog:loggingPrefs``): ``{"browser": "ALL"}`` the pages' console (CSP refusals
    included), ``{"performance": "ALL"}`` the DevTools protocol's Network and Page events."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = cast(str, shutil.which("chromium"))  # on PATH: see missing_browser()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    if logs:
        options.set_capability("goog:loggingPrefs", dict(logs))
    driver = webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")), options=options)
    try:
        driver.set_page_load_timeout(30)
        if authorization:
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": authorization}})
        yield driver
    finally:
        driver.quit()


def screenshot(driver, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    assert driver.save_screenshot(str(path)), f"could not save {path}"
    return path


def wait_for(driver, condition, timeout: float, what: str, poll: float = 0.5, details=lambda: ""):
    """``condition(driver)`` until it is truthy (what ``WebDriverWait(...).until`` does: an
    element not there yet, or gone stale, is "not yet"); on a timeout, a screenshot
    (``failed-<what>.png``) and the page's visible text go into the failure."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    def failure() -> str:
        path = screenshot(driver, "failed-" + "-".join(what.split())[:60])
        text = driver.find_element(By.TAG_NAME, "body").text
        return f"{what} (screenshot {path})\npage text:\n{text[:3000]}\n{details()}"

    return wait_until(
        lambda: condition(driver),
        timeout,
        interval=poll,
        message=failure,
        ignoring=(NoSuchElementException, StaleElementReferenceException),
    )


def page_text(driver) -> str:
    """The page's visible text."""
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.TAG_NAME, "body").text)


def heading(driver, starts: str, what: str, timeout: float = 30, css: str = "#page h2"):
    """The first heading matching ``css`` (the inspector's page heading, by default) whose
    text starts with ``starts``, once there (fails at ``timeout`` saying ``what``)."""
    from selenium.webdriver.common.by import By

    return wait_for(
        driver,
        lambda d: next((h for h in d.find_elements(By.CSS_SELECTOR, css) if h.text.startswith(starts)), False),
        timeout,
        what,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(url: str, authorization: str | None = None, timeout: float = 2.0) -> int | None:
    """The HTTP status of a GET, or None when nothing answers."""
    request = urllib.request.Request(url, headers={"Authorization": authorization} if authorization else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


class Flower:
    """``celery -A memq.worker.monitor_app flower`` (what ``memq flower`` runs) on a free loopback port,
    with basic auth, the given environment and its log in ``log_path``."""

    def __init__(self, env: dict[str, str], log_path: Path, user: str = "user", password: str = "pass"):
        from memq.cli.worker_commands import celery_argv

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.authorization = basic_auth_header(user, password)
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - Flower owns it for its lifetime
        argv = celery_argv("flower", f"--port={self.port}", "--address=127.0.0.1", f"--basic_auth={user}:{password}")
        self.process = subprocess.Popen(
            argv, cwd=ROOT, env={**os.environ, **env}, stdout=self._log, stderr=subprocess.STDOUT
        )

    def log_tail(self, chars: int = 3000) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until the authenticated dashboard answers 200 (polled; fails at ``timeout``)."""

        def answering() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"Flower exited with code {self.process.returncode}:\n{self.log_tail()}")
            return http_status(self.url + "/", self.authorization) == 200

        # polled every 0.2 s while the port is not yet open
        wait_until(answering, timeout, interval=0.2, message=lambda: f"Flower did not answer:\n{self.log_tail()}")

    def tasks(self, search: str) -> list[dict]:
        """Flower's own record of the tasks matching ``search`` (its JSON API, the state the
        tasks page is drawn from); empty while Flower does not answer."""
        query = urllib.parse.urlencode({"search": search})
        request = urllib.request.Request(f"{self.url}/api/tasks?{query}", headers={"Authorization": self.authorization})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return list(json.load(response).values())
        except OSError:
            return []

    def wait_tasks(self, search: str, done: Callable[[list[dict]], bool], timeout: float) -> list[dict]:
        """Until Flower's record of the tasks matching ``search`` satisfies ``done`` (polled,
        as Flower has no push API; fails at ``timeout`` with what it had)."""
        found: list[dict] = []

        def recorded() -> bool:
            found[:] = self.tasks(search)
            return done(found)

        # polled every 0.5 s: Flower has no push API
        wait_until(recorded, timeout, interval=0.5, message=lambda: f"Flower's tasks: {found}\n{self.log_tail()}")
        return found

    def stop(self, timeout: float = 20.0) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()
