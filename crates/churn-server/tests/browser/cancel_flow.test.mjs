// The cancel-flow widget in a real browser (Debian's chromium, driven by playwright-core):
// a page served from an allowed origin opens the modal for a customer its server signed
// (customerHash, decisions §16); choosing a reason and accepting the
// offer records a recovered event and a saved session (checked through the API); Escape
// closes without an event, leaving the session open;
// Tab stays inside the dialog; it fits a 360 px wide screen. Screenshots go to
// <repo>/target/browser/.
//
// Needs a built server: CHURN_SERVER_BIN, else $CARGO_TARGET_DIR/debug/churn-server, else
// <repo>/target/debug/churn-server. Chromium: CHROMIUM_BIN, else /usr/bin/chromium.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { DEADLINE_MS, callApi, openBrowser, screenshot, startServer, widgetFocus } from "./harness.mjs";

let server, api, page, browser, shop, shopOrigin, publicKey, token, identitySecret;

const call = (method, path, body, headers = {}) => callApi(api, method, path, body, headers);

const auth = () => ({ authorization: `Bearer ${token}` });
const events = async () => (await call("GET", "/projects/acme/churn-events", undefined, auth())).data;
// Newest first.
const sessions = async () => (await call("GET", "/projects/acme/cancel-flow/sessions", undefined, auth())).data;

/** The customer's site: a page that embeds the widget from the service, with the hash its
 * server makes for the signed-in customer (as the README shows in Node). */
function startShop() {
  shop = createServer((req, res) => {
    const customerHash = createHmac("sha256", identitySecret)
      .update("dana@customer.example")
      .digest("hex");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
      <meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title></head>
      <body><h1>Your account</h1><button id="open" type="button">Cancel subscription</button>
      <script src="${api}/widget/v1/cancel-flow.js"></script>
      <script>
        document.getElementById("open").addEventListener("click", () => {
          window.result = null;
          ChurnCancelFlow.open({ publicKey: ${JSON.stringify(publicKey)}, customerEmail: "dana@customer.example",
            customerHash: ${JSON.stringify(customerHash)}, customerName: "Dana", planName: "Pro", mrr: 4900 }).then((r) => { window.result = r; });
        });
      </script></body></html>`);
  });
  return new Promise((resolvePromise) =>
    shop.listen(0, "127.0.0.1", () => resolvePromise(`http://127.0.0.1:${shop.address().port}`)),
  );
}

before(async () => {
  server = await startServer("browser");
  api = server.base;
  token = (await call("POST", "/auth/register", { name: "Owner", email: "owner@acme.example", password: "correct horse" })).data.token;
  const project = (await call("POST", "/projects", { name: "Acme" }, auth())).data;
  publicKey = project.api_keys.public_key;
  identitySecret = (await call("GET", "/projects/acme/identity-secret", undefined, auth())).data.identity_secret;
  shopOrigin = await startShop();
  await call("PUT", "/projects/acme/allowed-origins", { allowed_origins: [shopOrigin] }, auth());
  // Dana accepts an offer and is offered another later: no offer cooldown here.
  await call("PATCH", "/projects/acme", { settings: { offer_cooldown_days: 0 } }, auth());
  await call("PUT", "/projects/acme/cancel-flow", {
    reasons: [
      { code: "too_expensive", label: "It costs too much" },
      { code: "missing_features", label: "A feature is missing" },
      { code: "other", label: "Something else" },
    ],
    offers: {
      too_expensive: { kind: "discount", percent: 30, months: 3 },
      other: { kind: "pause", max_months: 2 },
    },
    copy: { title: "Before you cancel" },
    colors: { primary: "#0f766e" },
  }, auth());
  ({ browser, page } = await openBrowser({ width: 1024, height: 768 }));
});

after(async () => {
  await browser?.close();
  shop?.close();
  server?.stop();
});

async function openWidget() {
  await page.goto(shopOrigin);
  await page.click("#open");
  await page.getByRole("dialog", { name: "Before you cancel" }).waitFor();
}

async function outcome() {
  await page.waitForFunction(() => window.result !== null && window.result !== undefined);
  return page.evaluate(() => window.result);
}

test("choosing a reason and accepting the offer records a recovered event", async () => {
  await openWidget();
  assert.equal(await widgetFocus(page), "churn-cf-reason-0", "focus moves into the dialog");
  const proceed = page.getByRole("button", { name: "Continue" });
  assert.equal(await proceed.isDisabled(), true);
  await page.getByRole("radio", { name: "It costs too much" }).check();
  await page.getByLabel("Anything else you would like to tell us? (optional)").fill("Cheaper elsewhere");
  await proceed.click();
  await page.getByText("Stay and get 30% off for the next 3 months.").waitFor();
  assert.equal(await widgetFocus(page), "Accept offer", "the offer's button takes the focus");
  const text = await page.getByRole("dialog").innerText();
  assert.ok(!/null|undefined|\{/.test(text), text);
  await screenshot(page, "cancel-flow-modal");
  await page.getByRole("button", { name: "Accept offer" }).click();
  await page.getByRole("status").filter({ hasText: "Thank you for staying" }).waitFor();
  await page.getByRole("button", { name: "Close" }).click();
  const result = await outcome();
  assert.equal(result.outcome, "saved");
  assert.deepEqual(result.offer, { kind: "discount", percent: 30, months: 3, applied: false });
  assert.equal(await page.locator("[data-churn-cancel-flow]").count(), 0, "the dialog is gone");
  assert.equal(await page.evaluate(() => document.activeElement.id), "open", "focus is given back");

  const recorded = await events();
  assert.equal(recorded.length, 1);
  const event = (await call("GET", `/projects/acme/churn-events/${result.churnEventId}`, undefined, auth())).data;
  assert.equal(event.status, "recovered");
  assert.equal(event.recovered_via, "cancel_flow");
  assert.equal(event.provider, "cancel_flow");
  assert.equal(event.reason_code, "too_expensive");
  assert.equal(event.cancel_reason, "Cheaper elsewhere");
  assert.equal(event.customer_email, "dana@customer.example");
  assert.equal(event.mrr, 4900);

  // The open was one session (decisions §19), through the offer to its outcome.
  const [session, ...others] = await sessions();
  assert.equal(others.length, 0);
  assert.equal(session.status, "saved");
  assert.equal(session.reason, "too_expensive");
  assert.equal(session.offer_kind, "discount");
  assert.equal(session.customer_email, "dana@customer.example");
});

test("Tab and Shift+Tab stay inside the dialog", async () => {
  await openWidget();
  await page.getByRole("radio", { name: "Something else" }).check();
  const seen = new Set();
  for (let i = 0; i < 8; i++) {
    await page.keyboard.press("Tab");
    const where = await widgetFocus(page);
    assert.ok(where, `Tab ${i + 1} left the dialog`);
    seen.add(where);
  }
  for (let i = 0; i < 8; i++) {
    await page.keyboard.press("Shift+Tab");
    assert.ok(await widgetFocus(page), `Shift+Tab ${i + 1} left the dialog`);
  }
  // Radio group, feedback box and both buttons: the cycle went all the way round.
  assert.ok(seen.has("Keep my subscription") && seen.has("Continue") && seen.has("churn-cf-feedback"), [...seen].join(", "));
  await page.keyboard.press("Escape");
  assert.equal((await outcome()).outcome, "closed");
});

test("Escape closes without an event", async () => {
  const before = (await events()).length;
  await openWidget();
  await page.getByRole("radio", { name: "A feature is missing" }).check();
  await page.keyboard.press("Escape");
  const result = await outcome();
  assert.deepEqual(result, { outcome: "closed" });
  assert.equal(await page.locator("[data-churn-cancel-flow]").count(), 0);
  assert.equal((await events()).length, before, "nothing was recorded");
  assert.equal((await sessions())[0].status, "opened", "the session stays open, to be abandoned");
});

test("a pause offer takes its length from a labelled select and can be declined", async () => {
  await openWidget();
  await page.getByRole("radio", { name: "Something else" }).check();
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByText("Pause your subscription for up to 2 months instead.").waitFor();
  // The widget reported the reason before showing its offer (it does not wait on that call).
  const deadline = Date.now() + DEADLINE_MS;
  while ((await sessions())[0].status !== "offer_shown") {
    assert.ok(Date.now() < deadline, "the session never reached offer_shown");
    await new Promise((r) => setTimeout(r, 50));
  }
  await page.getByLabel("Pause for (months)").selectOption("1");
  await page.getByRole("button", { name: "No thanks, cancel" }).click();
  await page.getByRole("status").filter({ hasText: "Your cancellation is recorded" }).waitFor();
  await page.keyboard.press("Escape");
  const result = await outcome();
  assert.equal(result.outcome, "cancelled");
  assert.deepEqual(result.offer, { kind: "pause", max_months: 2, pause_months: 1, applied: false });
  const event = (await call("GET", `/projects/acme/churn-events/${result.churnEventId}`, undefined, auth())).data;
  assert.equal(event.status, "new");
  assert.equal(event.reason_code, "other");
  const [session] = await sessions();
  assert.deepEqual([session.status, session.reason, session.offer_kind], ["cancelled", "other", "pause"]);
});

test("the dialog fits a 360 px wide screen", async () => {
  await page.setViewportSize({ width: 360, height: 740 });
  await openWidget();
  const box = await page.getByRole("dialog").boundingBox();
  assert.ok(box.x >= 0 && box.x + box.width <= 360, JSON.stringify(box));
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(overflow <= 360, `page scrolls sideways: ${overflow}`);
  await screenshot(page, "cancel-flow-360");
  await page.keyboard.press("Escape");
  await outcome();
});

test("the demo page runs under its CSP for the demo customer and stores nothing", async () => {
  await page.setViewportSize({ width: 1024, height: 768 });
  // The demo page is served by the service itself: its origin must be listed to call it.
  await call("PUT", "/projects/acme/allowed-origins", { allowed_origins: [shopOrigin, api] }, auth());
  const refused = [];
  page.on("console", (m) => /Content Security Policy/i.test(m.text()) && refused.push(m.text()));
  const before = (await events()).length;
  await page.goto(`${api}/widget/v1/demo?key=${publicKey}`);
  await page.getByText("demo@acme.churn.invalid").first().waitFor();
  await page.click("#cancel");
  await page.getByRole("dialog", { name: "Before you cancel" }).waitFor();
  await page.getByRole("radio", { name: "It costs too much" }).check();
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByRole("button", { name: "Accept offer" }).click();
  await page.getByRole("status").filter({ hasText: "Thank you for staying" }).waitFor();
  await screenshot(page, "cancel-flow-demo");
  await page.getByRole("button", { name: "Close" }).click();
  const shown = JSON.parse(await page.locator("#result").innerText());
  assert.equal(shown.outcome, "saved");
  assert.equal(shown.churnEventId, null, "the demo customer's answer has no event");
  assert.deepEqual(refused, [], "nothing refused by the page's policy");
  assert.equal((await events()).length, before, "nothing was recorded");
});
