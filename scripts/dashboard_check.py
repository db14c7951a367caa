#!/usr/bin/python3
"""Drives the dashboard in headless Chromium (Debian's chromium, chromium-driver, python3-selenium).

Loads the page, waits until it is live, until its numbers move (`total-delivered` grows), then until they
settle (queue empty, nothing in flight, the same values three polls in a row); saves a screenshot and prints
the values shown as one JSON object for the caller (Tests/WorkerTests/DashboardBrowserTests) to compare with
Redis. Every wait has a deadline; exit status 1 with a message on stderr when one passes.
"""
import argparse, json, sys, time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

parser = argparse.ArgumentParser()
parser.add_argument("--url", required=True)
parser.add_argument("--screenshot", required=True)
parser.add_argument("--timeout", type=float, default=120)
parser.add_argument("--chromium", default="/usr/bin/chromium")
parser.add_argument("--driver", default="/usr/bin/chromedriver")
args = parser.parse_args()

IDS = ["queue-total", "in-flight", "retry-size", "dead-letters", "results-length", "p50", "p99",
       "total-delivered", "total-retrying", "total-token_dropped", "total-failed", "total-rejected"]

options = webdriver.ChromeOptions()
options.binary_location = args.chromium
for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1050",
             "--no-first-run", "--disable-extensions", "--disable-background-networking"]:
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service(args.driver), options=options)
deadline = time.monotonic() + args.timeout


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def shown():
    # One script call reads every value at once: the page re-renders its tables every second, so element
    # handles found one by one could go stale between the find and the read.
    return driver.execute_script("""
        const ids = arguments[0], values = {};
        for (const id of ids) { const e = document.getElementById(id); values[id] = e ? e.textContent : null; }
        values.workers = document.querySelectorAll("#workers tr td:nth-child(2)").length;
        values.state = document.getElementById("state").textContent;
        return values;""", IDS)


def number(text):
    try:
        return int(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def wait(what, condition):
    while time.monotonic() < deadline:
        values = shown()
        if condition(values):
            return values
        time.sleep(0.25)
    fail("dashboard_check: timed out waiting for %s; last seen %s" % (what, json.dumps(shown())))


try:
    driver.get(args.url)
    first = wait("the page to go live", lambda v: v["state"].startswith("live") and number(v["total-delivered"]) is not None)
    start = number(first["total-delivered"])
    print("dashboard_check: live", file=sys.stderr, flush=True)
    wait("the delivered count to move", lambda v: (number(v["total-delivered"]) or 0) > start)
    previous, same = None, 0
    while True:
        values = wait("the queue to drain", lambda v: number(v["queue-total"]) == 0 and number(v["in-flight"]) == 0)
        key = {k: v for k, v in values.items() if k != "state"}
        same = same + 1 if key == previous else 0
        previous = key
        if same >= 3:
            break
        time.sleep(1.2)
    driver.save_screenshot(args.screenshot)
    values["moved_from"] = start
    print(json.dumps(values))
finally:
    driver.quit()
