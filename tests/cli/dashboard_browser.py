#!/usr/bin/env python3
"""The dashboard as an operator sees it, in headless Chromium driven by
Selenium (Debian's python3-selenium, chromium and chromium-driver), for
tests/cli/dashboard_test.sh, which starts etcd, makes the recipe state with
the tool and starts two dashboards: one read-only, one with --allow-actions.

    dashboard_browser.py BIN ENDPOINT READONLY_URL ACTIONS_URL ARTIFACTS_DIR

Prints one `PASS: ...` or `FAIL: ...` line per check (the shell test counts
them) and `MEASURED: ...` lines; screenshots go to ARTIFACTS_DIR. Every
wait has a deadline. Chromium runs with the flags that keep it off the
network: it only ever reaches the dashboard on 127.0.0.1.
"""
import os
import subprocess
import sys
import time

from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By

import dashboard_page as page

BIN, ENDPOINT, RO_URL, RW_URL, ARTIFACTS = sys.argv[1:6]
LATENCY_CHANGES = int(os.environ.get("DASHBOARD_TEST_CHANGES", "200"))
checks = page.Checks()
report = checks.report


def wait_for(predicate, timeout, interval=0.02):
    """Polls `predicate` until it returns a true value or `timeout` s pass."""
    deadline = time.time() + timeout
    while True:
        try:
            value = predicate()
        except WebDriverException:
            value = None
        if value:
            return value
        if time.time() >= deadline:
            return None
        time.sleep(interval)


def tool(*args, timeout=30):
    return subprocess.run([BIN, "--endpoints", ENDPOINT, "--timeout", "5s", *args], capture_output=True, text=True,
                          timeout=timeout)


def card(d, recipe_id):
    found = d.find_elements(By.CSS_SELECTOR, f'[data-recipe-id="{recipe_id}"]')
    return found[0] if found else None


# A card is drawn again whenever its recipe changes, and every 5 s while it
# shows lease TTLs, so a handle to an element inside it may go stale between
# two steps. What a card shows is therefore read in one step in the page,
# and a button is found and clicked in one step, retried while it is redrawn.

def in_card(d, recipe_id, selector, attr=None):
    """The elements of card `recipe_id` matching `selector` now, each as
    {"text", "attr"} (the value of `attr`); None when there is no such card."""
    return d.execute_script("""
        const [id, selector, attr] = arguments;
        const c = document.querySelector(`[data-recipe-id="${id}"]`);
        if (!c) return null;
        return Array.from(c.querySelectorAll(selector),
                          e => ({text: e.textContent, attr: attr ? e.getAttribute(attr) : null}));""",
                            recipe_id, selector, attr)


def click_in_card(d, recipe_id, row_selector, action, attr):
    """Clicks the `action` button of the first row of card `recipe_id`
    matching `row_selector` that has one: that row's `attr` (None when no
    such button appeared within 5 s)."""
    def attempt():
        c = card(d, recipe_id)
        for row in c.find_elements(By.CSS_SELECTOR, row_selector) if c else []:
            buttons = row.find_elements(By.CSS_SELECTOR, f'button[data-action="{action}"]')
            if buttons:
                ident = row.get_attribute(attr)
                buttons[0].click()  # a stale button raises before anything is clicked: tried again
                return (ident,)
        return None
    clicked = wait_for(attempt, 5)
    return clicked[0] if clicked else None


def shot(d, name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    d.save_screenshot(os.path.join(ARTIFACTS, name + ".png"))


def js_errors(d):
    """Errors of the page's own code. Chromium also logs each non-2xx answer
    to a fetch (the refusals this test provokes) as an error of source
    "network": those are not the page's."""
    return [e for e in d.get_log("browser") if e.get("level") == "SEVERE" and e.get("source") != "network"]


def open_page(d, url):
    d.get(url)
    return wait_for(lambda: d.execute_script("return window.__dashboard && window.__dashboard.firstRender"), 10)


def main():
    d = page.browser(console_log=True)
    try:
        run(d)
    finally:
        d.quit()
    return checks.exit_code()


def run(d):
    # --- the read-only page: every kind of recipe the tool made --------------------------------
    first = open_page(d, RO_URL)
    report(first is not None, f"the read-only page loads and renders its first state ({first} ms after navigation)")
    expected = {
        "lock_or_election:/d/lock": "a lock",
        "semaphore:/d/sem": "a semaphore",
        "lock_or_election:/d/leader": "an election",
        "work_queue:/d/jobs": "a work queue",
        "queue:/d/q": "a queue",
        "count_barrier:/d/start": "a count barrier",
        "counter:/d/hits": "a counter",
        "services:/d/services": "services",
    }
    missing = [what for rid, what in expected.items() if wait_for(lambda rid=rid: card(d, rid), 5) is None]
    report(not missing, "every recipe the tool made has its card", f"missing: {missing}")
    holder = in_card(d, "lock_or_election:/d/lock", ".holder") or []
    waiters = in_card(d, "lock_or_election:/d/lock", '[data-role="waiting"]') or []
    report(len(holder) == 1 and len(waiters) == 2, "the lock shows its holder and its 2 waiters in order",
           f"holders {len(holder)}, waiters {len(waiters)}")
    dead = in_card(d, "work_queue:/d/jobs", "[data-dead-id]") or []
    in_flight = in_card(d, "work_queue:/d/jobs", '[data-role="in_flight"]') or []
    report(len(dead) == 1 and len(in_flight) == 1, "the work queue shows its item in flight and its dead letter",
           f"in flight {len(in_flight)}, dead {len(dead)}")
    if dead:
        text = dead[0]["text"]
        report("exit" in text or "deliver" in text.lower() or text, "the dead letter row says why it died", text)
    report(not d.find_elements(By.CSS_SELECTOR, "button[data-action]"),
           "read-only: no action buttons on the page")
    status = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch('/api/action', {method: 'POST', headers: {'Content-Type': 'application/json',
              'X-Etcd-Recipes-Action': '1'}, body: JSON.stringify({action: 'purge', prefix: '/d',
              name_b64: btoa('/d/jobs'), id: 'x'})}).then(r => done(r.status), e => done(String(e)));""")
    report(status == 403, f"read-only: the server refuses an action (HTTP {status})")
    shot(d, "dashboard-readonly")

    # --- a lock's holder appears within 1 s of the acquisition ---------------------------------
    acquired = os.path.join(ARTIFACTS, "acquired")
    if os.path.exists(acquired):
        os.remove(acquired)  # an earlier run's
    holder_proc = subprocess.Popen([BIN, "--endpoints", ENDPOINT, "lock", "/d/fresh", "--ttl", "10", "--", "sh",
                                    "-c", f"date +%s.%N > {acquired}.tmp && mv {acquired}.tmp {acquired}; sleep 60"])
    try:
        seen = wait_for(lambda: in_card(d, "lock_or_election:/d/fresh", ".holder") and time.time(), 10,
                        interval=0.01)
        got = wait_for(lambda: os.path.exists(acquired) and float(open(acquired).read()), 10)
        delay = (seen - got) if seen and got else None
        report(delay is not None and delay <= 1.0,
               "a lock's holder appears within 1 s of the acquisition"
               + (f" ({delay * 1000:.0f} ms after its command started)" if delay is not None else ""))
    finally:
        holder_proc.terminate()
        holder_proc.wait(20)
    gone = wait_for(lambda: card(d, "lock_or_election:/d/fresh") is None, 5)
    report(gone, "a released lock's card goes away")

    # --- a directory of keys of their own: each new one appears (read alone) ---------------------
    owners = [subprocess.Popen([BIN, "--endpoints", ENDPOINT, "transient", f"/d/sessions/s{i}", f"owner {i}", "--ttl",
                                "10", "--", "sleep", "60"]) for i in (1, 2)]
    try:
        shown = wait_for(lambda: card(d, "transient:/d/sessions/s1") and card(d, "transient:/d/sessions/s2"), 10)
        report(bool(shown), "transient keys in one directory: each has its card")
    finally:
        for o in owners:
            o.terminate()
            o.wait(20)
    gone = wait_for(lambda: card(d, "transient:/d/sessions/s1") is None and
                    card(d, "transient:/d/sessions/s2") is None, 10)
    report(bool(gone), "... and their cards go when their owners exit")

    # --- update latency, etcd change -> page, over many changes --------------------------------
    d.execute_script("window.__dashboard.applied.length = 0")
    changes = []
    for i in range(LATENCY_CHANGES):
        key = f"/d/rate{i % 4}"
        t0 = time.time() * 1000
        rev = page.gateway_put(ENDPOINT, key, str(i))
        changes.append((rev, t0))
        # Spaced so each is its own change (a burst would be one update).
        page.wait_for_revision(d, rev, 5)
        time.sleep(0.02)
    record = page.applied(d)
    lat = sorted(page.latency(record, rev, t0) for rev, t0 in changes)
    p50, p99 = page.percentile(lat, 0.5), page.percentile(lat, 0.99)
    print(f"MEASURED: update latency over {len(lat)} changes: p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
          f"max {lat[-1]:.1f} ms", flush=True)
    report(p50 <= 100 and p99 <= 500,
           f"update latency etcd -> page over {len(lat)} changes: p50 {p50:.0f} ms <= 100, p99 {p99:.0f} ms <= 500")
    report(not js_errors(d), "no errors in the browser console", js_errors(d))

    # --- the page with actions ------------------------------------------------------------------
    first = open_page(d, RW_URL)
    report(first is not None, "the page with actions loads")
    before = tool("workqueue", "size", "/d/jobs").stdout.strip()
    dead_id = click_in_card(d, "work_queue:/d/jobs", "[data-dead-id]", "requeue", "data-dead-id")
    report(dead_id is not None, "actions on: the dead letter has a Requeue button")
    if dead_id is not None:
        confirm = wait_for(lambda: [b for b in d.find_elements(By.ID, "confirm-action") if b.is_displayed()], 3)
        report(bool(confirm), "Requeue asks for confirmation first")
        shot(d, "dashboard-confirm-requeue")
        if confirm:
            confirm[0].click()
            cleared = wait_for(lambda: in_card(d, "work_queue:/d/jobs", f'[data-dead-id="{dead_id}"]') == [], 5)
            logged = wait_for(lambda: d.find_elements(By.CSS_SELECTOR, "#action-log li.ok"), 5)
            after = tool("workqueue", "size", "/d/jobs").stdout.strip()
            report(cleared and logged, "requeued: the dead letter leaves the page, the outcome is logged on it")
            report(after != before and tool("workqueue", "dead-letters", "/d/jobs").stdout.strip() == "",
                   f"... and etcd has it back in the queue (size {before} -> {after}), no dead letter left")
            shot(d, "dashboard-after-requeue")

    # Release a holder: the holder's command is stopped as a loss, a waiter takes over.
    token_before = click_in_card(d, "lock_or_election:/d/lock", ".holder", "release", "data-key")
    report(token_before is not None, "actions on: the lock's holder has a Release button")
    if token_before is not None:
        confirm = wait_for(lambda: [b for b in d.find_elements(By.ID, "confirm-action") if b.is_displayed()], 3)
        if confirm:
            confirm[0].click()
        moved = wait_for(lambda: [r for r in in_card(d, "lock_or_election:/d/lock", ".holder", "data-key") or []
                                  if r["attr"] != token_before], 10)
        report(bool(moved), "released: the holder's key is deleted and the next waiter holds, on the page")
        shot(d, "dashboard-after-release")
    report(not js_errors(d), "no errors in the browser console (actions page)", js_errors(d))


if __name__ == "__main__":
    sys.exit(main())
