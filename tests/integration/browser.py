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
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

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
def chromium(authorization: str | None = None, width: int = 1440, height: int = 1000) -> Iterator:
    """A headless Chromium session; ``authorization`` is sent as the Authorization header
    with every request the page makes (navigation, XHR, POST), through the DevTools
    protocol, which is how the browser logs in to an HTTP basic-auth site without a
    dialog."""
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
    """``WebDriverWait(driver, timeout).until(condition)``; on a timeout, a screenshot
    (``failed-<what>.png``) and the page's visible text go into the failure."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(
            driver,
            timeout,
            poll_frequency=poll,
            ignored_exceptions=(NoSuchElementException, StaleElementReferenceException),
        ).until(condition)
    except TimeoutException:
        path = screenshot(driver, "failed-" + "-".join(what.split())[:60])
        text = driver.find_element(By.TAG_NAME, "body").text
        raise AssertionError(
            f"{what}: not within {timeout:.0f} s (screenshot {path})\npage text:\n{text[:3000]}\n{details()}"
        ) from None


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
    """``celery -A memq.worker.app flower`` (what ``memq flower`` runs) on a free loopback port,
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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"Flower exited with code {self.process.returncode}:\n{self.log_tail()}")
            if http_status(self.url + "/", self.authorization) == 200:
                return
            time.sleep(0.2)  # poll interval while the port is not yet open
        raise AssertionError(f"Flower did not answer within {timeout:.0f} s:\n{self.log_tail()}")

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
        deadline, found = time.monotonic() + timeout, []
        while time.monotonic() < deadline:
            found = self.tasks(search)
            if done(found):
                return found
            time.sleep(0.5)  # poll interval: Flower has no push API
        raise AssertionError(f"Flower's tasks after {timeout:.0f} s: {found}\n{self.log_tail()}")

    def stop(self, timeout: float = 20.0) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()
