"""What the dashboard's browser drivers (dashboard_browser.py,
dashboard_scale.py) share: PASS/FAIL reporting, etcd's JSON gateway, a
headless Chromium kept off the network, and the time from an etcd change to
the page that shows it.

Latency is read from the page's own record: the page keeps, for each state
it applied, the revision and the time it drew it (`window.__dashboard
.applied`, milliseconds since the epoch), so a change's latency is the first
record at or past its revision minus the time taken just before the change
was sent. Every wait has a deadline.
"""
import base64
import json
import os
import time
import urllib.request


class Checks:
    """Prints one `PASS: name` or `FAIL: name` line per check (the shell
    tests count them), with the detail of a failure indented below it."""

    def __init__(self):
        self.failures = 0

    def report(self, ok, name, detail=""):
        print(("PASS: " if ok else "FAIL: ") + name, flush=True)
        if not ok:
            self.failures += 1
            if detail:
                print("      " + str(detail).replace("\n", "\n      "), flush=True)

    def exit_code(self):
        return 1 if self.failures else 0


def b64(text):
    return base64.b64encode(text.encode()).decode()


def gateway(endpoint, path, body, timeout=60):
    """One call to etcd's own JSON gateway (`/v3/kv/put`, `/v3/kv/txn`, ...):
    its answer as a dict."""
    req = urllib.request.Request(f"http://{endpoint}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.load(r)


def gateway_put(endpoint, key, value):
    """One put: the revision it committed at."""
    return int(gateway(endpoint, "/v3/kv/put", {"key": b64(key), "value": b64(value)}, timeout=10)["header"]["revision"])


def browser(console_log=False):
    """Headless Chromium (Debian's, through its chromedriver) with the flags
    that keep it off the network: it only reaches 127.0.0.1."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    o = webdriver.ChromeOptions()
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
              "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--disable-default-apps", "--disable-extensions", "--metrics-recording-only",
              "--disable-features=Translate,OptimizationHints,MediaRouter", "--proxy-server=direct://",
              "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--window-size=1400,1100"]:
        o.add_argument(a)
    o.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if console_log:
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=o)


def page_revision(d):
    """The newest revision the page has applied."""
    return d.execute_script("return Number(document.body.dataset.revision || 0)")


def wait_for_revision(d, rev, timeout):
    """Waits until the page has applied revision `rev` (or `timeout` s pass)."""
    deadline = time.time() + timeout
    while page_revision(d) < rev and time.time() < deadline:
        time.sleep(0.002)


def applied(d):
    """The page's record: (revision, drawn at ms since the epoch) per state applied."""
    return d.execute_script("return window.__dashboard.applied.map(a => [a.revision, a.at])")


def latency(record, rev, t0):
    """Milliseconds from `t0` until the page drew revision `rev` or later,
    by `record` (applied()); infinite if it never did."""
    at = [a for r, a in record if r >= rev]
    return min(at) - t0 if at else float("inf")


def percentile(sorted_values, fraction):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]
