"""Drives headless Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe), with
nothing but the standard library: sets a cookie, opens pages at desktop and phone widths, saves
screenshots, runs axe-core inside each page, and submits forms as a person would.

Reads a JSON plan on stdin:
  {"chromium": path, "axe": path to axe.min.js, "out": screenshot dir,
   "cookie": {"name", "value", "url"} or null,
   "pages": [{"name", "url", "act": JS or null, "expect": text or null,
              "elsewhere": {"url", "act", "expect"} or null, "restoreCookie": bool}]}
A page's `elsewhere` runs in a second tab after the page is drawn and before its `act` (a
session signed out in another tab, say); `restoreCookie` then sets the plan's cookie again, as
a browser still holding a signed-out session's cookie would send it.
Writes on stdout: {"pages": [{"name", "url", "title", "finalUrl", "violations": [...],
   "acted": bool, "found": bool, "statuses": [the act's document answers, redirects first],
   "elsewhereFound": bool}]}. Exits non-zero on a protocol failure or a timeout.
"""

import base64
import fcntl
import json
import os
import select
import subprocess
import sys
import tempfile
import time

DEADLINE_S = 30
SIZES = [("desktop", 1280, 900, False), ("phone", 390, 844, True)]


class Browser:
    def __init__(self, exe):
        self.profile = tempfile.TemporaryDirectory()
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def wire():
            # Above 9 first, so neither lands on the other's place before both are moved.
            reads = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            writes = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(reads, 3)
            os.dup2(writes, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", "--remote-debugging-pipe",
             "--user-data-dir=" + self.profile.name, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, close_fds=False, start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        # Every event read since the caller last cleared it (wait_event consumes `events`).
        self.seen = []

    def close(self):
        try:
            os.killpg(self.proc.pid, 9)
        except OSError:
            pass
        self.proc.wait(timeout=10)
        self.profile.cleanup()

    def _read(self, until):
        while b"\0" not in self.buffer:
            left = until - time.time()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise EOFError("chromium closed the pipe")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        message = json.loads(message)
        if "method" in message:
            self.seen.append(message)
        return message

    def call(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        until = time.time() + DEADLINE_S
        while True:
            answer = self._read(until)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_event(self, method, session):
        until = time.time() + DEADLINE_S
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self.events[: i + 1]
                    return event
            self.events.append(self._read(until))


def evaluate(browser, session, expression, await_promise=False):
    result = browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                               "awaitPromise": await_promise}, session)
    if "exceptionDetails" in result:
        raise RuntimeError(f"{expression[:60]}: {result['exceptionDetails']}")
    return result["result"].get("value")


def navigate(browser, session, url):
    browser.events.clear()
    browser.seen.clear()
    browser.call("Page.navigate", {"url": url}, session)
    browser.wait_event("Page.loadEventFired", session)


def document_statuses(events, session):
    """The HTTP statuses of the documents a tab loaded, in order: each redirect, then the
    answer it ended on."""
    statuses = []
    for event in events:
        params = event.get("params", {})
        if event.get("sessionId") != session or params.get("type") != "Document":
            continue
        if event["method"] == "Network.requestWillBeSent" and params.get("redirectResponse"):
            statuses.append(params["redirectResponse"]["status"])
        elif event["method"] == "Network.responseReceived":
            statuses.append(params["response"]["status"])
    return statuses


def elsewhere(browser, step):
    """Runs `step` in a second tab of the same browser (its cookies shared), then closes it;
    whether its `expect` text was shown."""
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    try:
        browser.call("Page.enable", {}, session)
        navigate(browser, session, step["url"])
        if step.get("act"):
            browser.events.clear()
            evaluate(browser, session, step["act"])
            browser.wait_event("Page.loadEventFired", session)
        text = evaluate(browser, session, "document.body.innerText")
        return step.get("expect", "") in text
    finally:
        browser.call("Target.closeTarget", {"targetId": target})


def set_cookie(browser, session, cookie):
    browser.call("Network.setCookie", {"name": cookie["name"], "value": cookie["value"],
                                       "url": cookie["url"], "path": "/console",
                                       "httpOnly": True, "sameSite": "Strict"}, session)


def main():
    plan = json.load(sys.stdin)
    axe = open(plan["axe"]).read()
    browser = Browser(plan["chromium"])
    results = []
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        browser.call("Page.enable", {}, session)
        browser.call("Network.enable", {}, session)
        # axe-core is injected by the protocol, not by the page: the page's own policy allows
        # no script, and stays as it is for everything the page does itself.
        browser.call("Page.setBypassCSP", {"enabled": True}, session)
        if plan.get("cookie"):
            set_cookie(browser, session, plan["cookie"])
        for page in plan["pages"]:
            entry = {"name": page["name"], "url": page["url"]}
            for label, width, height, mobile in SIZES:
                browser.call("Emulation.setDeviceMetricsOverride",
                             {"width": width, "height": height, "deviceScaleFactor": 1,
                              "mobile": mobile}, session)
                navigate(browser, session, page["url"])
                shot = browser.call("Page.captureScreenshot", {"format": "png"}, session)
                with open(os.path.join(plan["out"], f"{page['name']}-{label}.png"), "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
                entry["scrollWidth" + label.title()] = evaluate(
                    browser, session, "document.documentElement.scrollWidth")
            entry["title"] = evaluate(browser, session, "document.title")
            evaluate(browser, session, axe)
            found = evaluate(browser, session,
                             "axe.run(document, {resultTypes: ['violations']}).then(r => "
                             "r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, "
                             "nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)})))",
                             await_promise=True)
            entry["violations"] = found
            entry["acted"] = False
            if page.get("elsewhere"):
                entry["elsewhereFound"] = elsewhere(browser, page["elsewhere"])
                if page.get("restoreCookie") and plan.get("cookie"):
                    set_cookie(browser, session, plan["cookie"])
            if page.get("act"):
                browser.events.clear()
                browser.seen.clear()
                evaluate(browser, session, page["act"])
                browser.wait_event("Page.loadEventFired", session)
                entry["acted"] = True
                entry["statuses"] = document_statuses(browser.seen, session)
            entry["finalUrl"] = evaluate(browser, session, "location.href")
            if page.get("expect"):
                text = evaluate(browser, session, "document.body.innerText")
                entry["found"] = page["expect"] in text
            results.append(entry)
    finally:
        browser.close()
    json.dump({"pages": results}, sys.stdout)


if __name__ == "__main__":
    main()
