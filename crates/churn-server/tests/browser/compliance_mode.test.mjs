// Click-to-cancel (decisions §19) in a real browser: a flow with `compliance_mode: true`
// shows a "Cancel now" button on every step, reached with the keyboard alone (Tab), that
// records the cancellation at once; a flow without it shows none. The new offers' texts and
// a redirect's link are shown on the way.
//
// Needs a built server and chromium, as the other browser tests (harness.mjs).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer } from "node:http";

import { DEADLINE_MS, callApi, openBrowser, screenshot, startServer, widgetFocus } from "./harness.mjs";

let server, browser, page, shop, shopOrigin, publicKey, token, identitySecret;

const call = (method, path, body, headers = {}) => callApi(server.base, method, path, body, headers);

const auth = () => ({ authorization: `Bearer ${token}` });

/** Sets the default flow, in compliance mode or not. */
const setFlow = (complianceMode) =>
  call("PUT", "/projects/acme/cancel-flow", {
    reasons: [
      { code: "not_using_enough", label: "I do not use it enough" },
      { code: "missing_features", label: "A feature is missing" },
      { code: "other", label: "Something else" },
    ],
    offers: {
      not_using_enough: { kind: "trial_extension", days: 14 },
      missing_features: { kind: "redirect", url: "https://acme.example/roadmap", label: "See what is coming" },
    },
    copy: { title: "Before you cancel" },
    compliance_mode: complianceMode,
  }, auth());

/** The customer's site, embedding the widget for Dana with the hash its server makes. */
function startShop() {
  shop = createServer((req, res) => {
    const customerHash = createHmac("sha256", identitySecret).update("dana@customer.example").digest("hex");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
      <body><button id="open" type="button">Cancel subscription</button>
      <script src="${server.base}/widget/v1/cancel-flow.js"></script>
      <script>
        document.getElementById("open").addEventListener("click", () => {
          window.result = null;
          ChurnCancelFlow.open({ publicKey: ${JSON.stringify(publicKey)}, customerEmail: "dana@customer.example",
            customerHash: ${JSON.stringify(customerHash)} }).then((r) => { window.result = r; });
        });
      </script></body></html>`);
  });
  return new Promise((done) => shop.listen(0, "127.0.0.1", () => done(`http://127.0.0.1:${shop.address().port}`)));
}

before(async () => {
  server = await startServer("compliance");
  token = (await call("POST", "/auth/register", { name: "Owner", email: "owner@acme.example", password: "correct horse" })).data.token;
  publicKey = (await call("POST", "/projects", { name: "Acme" }, auth())).data.api_keys.public_key;
  identitySecret = (await call("GET", "/projects/acme/identity-secret", undefined, auth())).data.identity_secret;
  shopOrigin = await startShop();
  await call("PUT", "/projects/acme/allowed-origins", { allowed_origins: [shopOrigin] }, auth());
  ({ browser, page } = await openBrowser());
});

after(async () => {
  await browser?.close();
  shop?.close();
  server?.stop();
});

/** Presses Tab until the focus is on `name`, at most `limit` times; how many it took. */
async function tabTo(name, limit = 12) {
  for (let i = 1; i <= limit; i++) {
    await page.keyboard.press("Tab");
    if ((await widgetFocus(page)) === name) return i;
  }
  assert.fail(`${name} was not reached with ${limit} presses of Tab`);
}

async function openWidget() {
  await page.goto(shopOrigin);
  await page.click("#open");
  await page.getByRole("dialog", { name: "Before you cancel" }).waitFor();
}

async function outcome() {
  await page.waitForFunction(() => window.result !== null && window.result !== undefined, null, { timeout: DEADLINE_MS });
  return page.evaluate(() => window.result);
}

const event = async (id) => (await call("GET", `/projects/acme/churn-events/${id}`, undefined, auth())).data;

test("Cancel now on the first step cancels at once, from the keyboard", async () => {
  await setFlow(true);
  await openWidget();
  await tabTo("Cancel now");
  await page.keyboard.press("Enter");
  await page.getByRole("status").filter({ hasText: "Your cancellation is recorded" }).waitFor();
  await page.keyboard.press("Escape");
  const result = await outcome();
  assert.equal(result.outcome, "cancelled");
  const recorded = await event(result.churnEventId);
  assert.equal(recorded.status, "new");
  // No reason was chosen: the flow's "other" stands for it.
  assert.equal(recorded.reason_code, "other");
});

test("Cancel now on the offer step cancels with the chosen reason, from the keyboard", async () => {
  await setFlow(true);
  await openWidget();
  await page.getByRole("radio", { name: "I do not use it enough" }).check();
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByText("Take 14 more days of your trial, on us.").waitFor();
  await screenshot(page, "cancel-flow-compliance-offer");
  await tabTo("Cancel now");
  await page.keyboard.press("Space");
  await page.getByRole("status").filter({ hasText: "Your cancellation is recorded" }).waitFor();
  await page.keyboard.press("Escape");
  const result = await outcome();
  assert.equal(result.outcome, "cancelled");
  assert.deepEqual(result.offer, { kind: "trial_extension", days: 14, applied: false });
  const recorded = await event(result.churnEventId);
  assert.equal(recorded.status, "new");
  assert.equal(recorded.reason_code, "not_using_enough");
});

test("a redirect offer's link is reached by Tab; without compliance mode there is no Cancel now", async () => {
  await setFlow(false);
  await openWidget();
  assert.equal(await page.getByRole("button", { name: "Cancel now" }).count(), 0);
  await page.getByRole("radio", { name: "A feature is missing" }).check();
  await page.getByRole("button", { name: "Continue" }).click();
  const link = page.getByRole("link", { name: "See what is coming" });
  await link.waitFor();
  assert.equal(await link.getAttribute("href"), "https://acme.example/roadmap");
  assert.equal(await page.getByRole("button", { name: "Cancel now" }).count(), 0);
  await tabTo("See what is coming");
  await page.keyboard.press("Escape");
  assert.equal((await outcome()).outcome, "closed");
});
