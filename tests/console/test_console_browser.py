"""The console in a real headless Chromium, over a real cluster with traffic.

Drives the pages as a person would (log in, look at the cluster, ...), and saves screenshots of
the main pages: into a temporary directory, or with ``make console-screenshots``
(ROCKETQ_CONSOLE_SCREENSHOTS=docs/console) into docs/console/ for docs/console.md, so a plain
``make test`` leaves the tree as it was. Waits are generous (a loaded CI machine) and nothing is
timed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from browserkit import (
    CHROMEDRIVER,
    CHROMIUM,
    CHROMIUM_FLAGS,
    ConsoleProcess,
    Traffic,
    ensure_chromium,
    start_console,
)
from consolekit import ADMIN_NAME, ADMIN_PASSWORD, users

from rocketq.local.cluster import ClusterState

SCREENSHOTS: Final = Path(os.environ.get("ROCKETQ_CONSOLE_SCREENSHOTS")
                          or Path(tempfile.gettempdir()) / "rocketq-console-screenshots")
WAIT_S: Final = 20.0

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def console_process(cluster: ClusterState, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    workdir = tmp_path_factory.mktemp("console-browser")
    users_file = workdir / "users"
    users_file.write_text("".join(f"{u.name}:{u.role.value}:{u.password_hash}\n" for u in users().values()))
    process = start_console(cluster.namesrv, users_file, workdir)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    reason = ensure_chromium()
    if reason:
        pytest.skip(reason)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(WAIT_S * 3)
    try:
        yield driver
    finally:
        driver.quit()


def shot(driver, name: str) -> None:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1280, max(600, min(int(height) + 40, 2000)))
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    driver.set_window_size(1280, 900)


def lag(driver) -> int:  # type: ignore[no-untyped-def]
    return int(driver.find_element(By.ID, "lag").text)


def reload_until(driver, check, what: str) -> None:  # type: ignore[no-untyped-def]
    """Reload the page until ``check(driver)`` holds (the console shows state, it does not push it)."""
    def reloaded(d) -> bool:  # type: ignore[no-untyped-def]
        d.refresh()
        return bool(check(d))

    WebDriverWait(driver, WAIT_S * 3, poll_frequency=1.0).until(reloaded, f"waiting for {what}")


DETACHED = "does not belong to the document"
"""chromedriver's error for a node the page being loaded has just replaced (it is not reported
as a stale element, so WebDriverWait would not retry it by itself)."""


def text_appears(driver, css: str, text: str) -> None:  # type: ignore[no-untyped-def]
    present = expected_conditions.text_to_be_present_in_element((By.CSS_SELECTOR, css), text)

    def check(d) -> bool:  # type: ignore[no-untyped-def]
        try:
            return bool(present(d))
        except WebDriverException as exc:  # a form's answer replacing the page while it is read
            if DETACHED in str(exc):
                return False
            raise

    WebDriverWait(driver, WAIT_S).until(check, f"waiting for {text!r} in {css}")


def test_console_in_a_browser(cluster: ClusterState, console_process: ConsoleProcess, browser) -> None:  # type: ignore[no-untyped-def]
    driver = browser
    base = console_process.url

    # log in: a page asked for without a session leads to the login form, then back to it
    driver.get(f"{base}/cluster")
    WebDriverWait(driver, WAIT_S).until(expected_conditions.presence_of_element_located((By.ID, "username")))
    shot(driver, "login")
    driver.find_element(By.ID, "username").send_keys(ADMIN_NAME)
    driver.find_element(By.ID, "password").send_keys(ADMIN_PASSWORD)
    driver.find_element(By.ID, "login").click()

    # the cluster: the broker group with its role and address
    broker = next(p.address for p in cluster.processes if p.name == "broker-a")
    text_appears(driver, "#brokers", broker)
    assert "ASYNC_MASTER" in driver.find_element(By.ID, "brokers").text
    shot(driver, "cluster")
    driver.set_window_size(390, 844)  # a phone: the table scrolls inside the page, the page does not
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 390
    driver.save_screenshot(str(SCREENSHOTS / "phone-cluster.png"))
    driver.set_window_size(1280, 900)
    driver.find_element(By.LINK_TEXT, broker).click()
    text_appears(driver, "#runtime", "commitLogMaxOffset")

    # create a topic, then send a message with a key to it
    driver.get(f"{base}/topics")
    driver.find_element(By.ID, "new-topic").send_keys("BrowserTopic")
    driver.find_element(By.ID, "create-topic-submit").click()
    text_appears(driver, "main", "Topic BrowserTopic written to")
    driver.find_element(By.ID, "send-keys").send_keys("order-42")
    driver.find_element(By.ID, "send-body").send_keys('{"order": 42, "item": "rocket"}')
    driver.find_element(By.ID, "send-submit").click()
    text_appears(driver, "main", "SEND_OK")
    assert "1 message(s) held" in driver.find_element(By.TAG_NAME, "main").text
    shot(driver, "topic")

    # find the message by its key, and open it
    driver.get(f"{base}/messages?mode=key")
    driver.find_element(By.ID, "search-topic").send_keys("BrowserTopic")
    driver.find_element(By.ID, "search-key").send_keys("order-42")
    driver.find_element(By.ID, "search-submit").click()
    text_appears(driver, "#found", "order-42")
    shot(driver, "messages")
    driver.find_element(By.CSS_SELECTOR, "#found a").click()
    text_appears(driver, "#body-json", '"item": "rocket"')
    shot(driver, "message")

    # traffic: a group that holds 20 messages, then consumes them; a group whose messages all fail
    traffic = Traffic(cluster.namesrv, "BrowserTopic", "browser_slow", "browser_failing", 20)
    traffic.start()
    try:
        driver.get(f"{base}/groups/view?group=browser_slow")
        reload_until(driver, lambda d: lag(d) > 0, "browser_slow to show a lag")
        before = lag(driver)
        shot(driver, "group")
        traffic.release()
        reload_until(driver, lambda d: lag(d) < before, "the lag to fall")
        reload_until(driver, lambda d: lag(d) == 0, "the lag to reach 0")

        # reset the group's offset to the beginning of time: its lag comes back, then falls again
        Select(driver.find_element(By.CSS_SELECTOR, "#reset-offset select")).select_by_visible_text("BrowserTopic")
        reset_time = driver.find_element(By.ID, "reset-time")
        reset_time.clear()
        reset_time.send_keys("0")
        driver.find_element(By.ID, "reset-submit").click()
        text_appears(driver, "main", "Reset 8 queue(s) of BrowserTopic for browser_slow")

        # the failing group's dead letters: resend one
        driver.get(f"{base}/messages/dlq?group=browser_failing")
        reload_until(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "button.dlq-resend"), "dead letters")
        shot(driver, "dlq")
        driver.find_element(By.CSS_SELECTOR, "button.dlq-resend").click()
        text_appears(driver, "main", "Resent 1 dead letter(s) of browser_failing")
    finally:
        traffic.stop()

    # the charts: the console has been sampling every second; its SVG lines are drawn by console.js
    driver.get(f"{base}/charts")
    WebDriverWait(driver, WAIT_S).until(expected_conditions.presence_of_element_located(
        (By.CSS_SELECTOR, "svg.chart polyline")))
    assert "browser_slow" in driver.find_element(By.TAG_NAME, "main").text
    shot(driver, "charts")

    driver.get(f"{base}/audit")
    text_appears(driver, "main", "resend dead letters")
    shot(driver, "audit")
