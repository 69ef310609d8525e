"""Flower, checked in a real browser: a real worker process and Flower (with basic auth,
as in production) run next to each other, a conversation goes through the producer, and
headless Chromium shows the worker on Flower's dashboard, the finished memq tasks on its
tasks page and memq's queues on its broker page. Screenshots in .memq/screenshots/."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from browser import Flower, basic_auth_header, chromium, http_status, missing_browser, screenshot, wait_for
from processes import spawn_worker, stop_process, wait_for_workers

from memq.shared import tasks

NO_BROWSER = missing_browser()
pytestmark = [pytest.mark.integration, pytest.mark.skipif(NO_BROWSER is not None, reason=NO_BROWSER or "")]

EXPECTED_TASKS = (tasks.EVENT_SEGMENTATION, tasks.EPISODE_CREATION)


def _conversation(n: int = 8) -> list[dict]:
    t0 = datetime(2026, 4, 2, 9, 0, tzinfo=UTC)
    texts = [
        "Can you help me plan a trip to Lisbon in May?",
        "Sure. How many days, and do you prefer museums or walking tours?",
        "Five days, mostly walking and food.",
        "Then stay in Alfama and book a tram 28 ride early in the morning.",
        # a gap of an hour: a new event starts here, so more than one episode is created
        "Different topic: my sourdough starter smells like acetone.",
        "It is hungry. Feed it twice a day at a 1:5:5 ratio for a few days.",
        "Should I keep it in the fridge meanwhile?",
        "No, keep it at room temperature until it doubles reliably.",
    ][:n]
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": text,
            "timestamp": t0 + timedelta(seconds=40 * i + (3600 if i >= 4 else 0)),
        }
        for i, text in enumerate(texts)
    ]


def _rows(driver, table_id: str) -> list[list[str]]:
    """The rendered cells of each body row, read in one script (the dashboard redraws its
    rows every second, so elements found one call earlier may already be gone). A cell
    holding a titled link (a worker or task id, which Flower splits over two spans) reads
    as the title."""
    return driver.execute_script(
        """return Array.from(document.querySelectorAll(arguments[0])).map(row => Array.from(row.cells).map(cell => {
               const link = cell.querySelector('a[title]');
               return link ? link.title : cell.innerText.replace(/\\s+/g, ' ').trim();
           }));""",
        f"#{table_id} tbody tr",
    )


def _search(driver, table_id: str, query: str) -> None:
    """Type ``query`` into the DataTables search box above ``table_id``."""
    from selenium.webdriver.common.by import By

    box = wait_for(
        driver, lambda d: d.find_element(By.CSS_SELECTOR, f"#{table_id}_filter input"), 15, f"{table_id} search box"
    )
    box.clear()
    box.send_keys(query)
    assert box.get_attribute("value") == query


def test_flower_dashboard_and_tasks_page_show_the_worker_and_finished_memq_tasks(
    service_env, celery_app, producer, tenant, db, tmp_path
):
    from selenium.webdriver.common.by import By

    name = f"flower{uuid.uuid4().hex[:6]}"
    worker = spawn_worker(service_env, name)
    flower = None
    try:
        flower = Flower(service_env, tmp_path / "flower.log")
        wait_for_workers(celery_app, {name}, timeout=90)
        flower.wait_ready(timeout=60)
        # Basic auth is really on: without credentials Flower refuses the dashboard.
        assert http_status(flower.url + "/") == 401
        assert http_status(flower.url + "/", basic_auth_header("user", "wrong")) == 401

        with chromium(authorization=flower.authorization) as driver:
            # Dashboard: Flower lists a worker once it has its events (worker-online or a
            # heartbeat), so seeing it Online also means Flower's event receiver is running
            # before any message is sent: the tasks page is fed only by events received live.
            # Searched by name: other workers on the same broker may fill the first page.
            driver.get(flower.url + "/")
            assert driver.title.startswith("Workers"), driver.title
            _search(driver, "workers-table", f"{name}@")

            def worker_online(d) -> list[str] | bool:
                row = next((r for r in _rows(d, "workers-table") if r[0].startswith(f"{name}@")), None)
                return row if row and row[1] == "Online" else False

            row = wait_for(driver, worker_online, 60, f"dashboard lists {name} Online", details=flower.log_tail)
            wait_for(
                driver, lambda d: d.find_element(By.ID, "workers-online").text.isdigit(), 15, "dashboard summary cards"
            )
            assert int(driver.find_element(By.ID, "workers-online").text) >= 1, row
            screenshot(driver, "flower-dashboard")

            # A conversation through the producer, flushed, until every message is in an episode.
            conv = "flower-check"
            results = producer.add_messages(_conversation(), conversation_id=conv)
            assert all(r.status == "accepted" for r in results)
            assert producer.flush(conv)
            producer.wait_idle(conv, timeout=120)
            (episodes,) = db.execute(
                "SELECT count(*) FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s", (tenant, conv)
            ).fetchone()
            assert episodes >= 2

            # Flower learns of tasks from the worker's events, which under load may reach it a
            # while after the episodes are stored: wait until its own record (the JSON the
            # tasks page is drawn from) holds both kinds of task finished.
            def both_succeeded(found: list[dict]) -> bool:
                return all(any(t["name"] == name and t["state"] == "SUCCESS" for t in found) for name in EXPECTED_TASKS)

            recorded = flower.wait_tasks(f"args:{tenant}", both_succeeded, timeout=180)
            assert not any(t["state"] == "FAILURE" for t in recorded), recorded

            # Tasks page, searched the way a person would for this tenant's tasks (each memq
            # task's first argument is the tenant); the table is re-fetched until both kinds
            # of task show SUCCESS.
            driver.get(flower.url + "/tasks")
            assert driver.title.startswith("Tasks"), driver.title
            _search(driver, "tasks-table", f"args:{tenant}")

            def tasks_succeeded(d) -> list[list[str]] | bool:
                rows = _rows(d, "tasks-table")
                if all(any(r[0] == t and "SUCCESS" in r for r in rows) for t in EXPECTED_TASKS):
                    return rows
                d.execute_script("$('#tasks-table').DataTable().ajax.reload(null, false);")
                return False

            rows = wait_for(
                driver,
                tasks_succeeded,
                60,
                f"tasks page shows {', '.join(EXPECTED_TASKS)} SUCCESS",
                poll=1.0,
                details=flower.log_tail,
            )
            screenshot(driver, "flower-tasks")
            assert not any("FAILURE" in r for r in rows), rows

            # Broker page: memq's queues on the workers' Redis (Flower knows the broker by the
            # URL's scheme; memq's own transport named none it knew)
            def queues_listed(d) -> list[list[str]] | bool:
                d.get(flower.url + "/broker")
                rows = [r for r in _rows(d, "queue-table") if r]
                names = {r[0] for r in rows}
                return rows if set(tasks.ALL_QUEUES) <= names else False

            queues = wait_for(
                driver, queues_listed, 60, "broker page lists memq's queues", poll=1.0, details=flower.log_tail
            )
            assert "not supported" not in driver.page_source
            screenshot(driver, "flower-broker")
            assert all(len(r) >= 2 for r in queues), queues
    finally:
        if flower is not None:
            flower.stop()
        worker_err = stop_process(worker)
    assert "Traceback" not in worker_err, worker_err[-3000:]
