// The dashboard's customers, churn-risk and payments pages in a real browser (Debian's
// chromium, driven by playwright-core). Data is seeded through the API of a dev-mode server
// (its test clock and job runner): tracked customers scored by a recompute, an alert whose
// webhook receiver refuses every connection (a closed loopback port, private addresses
// allowed) until its four attempts fail, and a payment failure from a signed custom-provider
// event. A customer page with its risk history, redelivering the failed alert, and axe-core
// on every page; screenshots go to <repo>/target/browser/.
//
// The server, chromium, axe-core and screenshots: harness.mjs.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { DEADLINE_MS, bearer, callApi, checkA11y as axe, openBrowser, screenshot, signIn, startServer } from "./harness.mjs";

const QUIET = "quiet@shop.example";
const STEADY = "steady@shop.example";
const PAYER = "payer@shop.example";

let server, base, browser, page, cspViolations, token, failureId;
const checkA11y = (name) => axe(page, name);
const shot = (name) => screenshot(page, `dashboard-${name}`);

// `authorization: ""` leaves the session's token out (calls made with a key or signature).
const call = (method, path, body, headers = {}) =>
  callApi(base, method, path, body, { ...bearer(token), ...headers });

/** The API's seed: customers, a failed alert, a payment failure. */
async function seed() {
  token = (await call("POST", "/auth/register", { name: "Ada Founder", email: "ada@acme.example", password: "correct horse" })).data.token;
  await call("POST", "/projects", { name: "Acme", support_email: "support@acme.example" });
  const { data: keys } = await call("POST", "/projects/acme/rotate-keys");
  const { data: clock } = await call("GET", "/dev/clock");
  const now = Date.parse(clock.now);
  const daysAgo = (d, h = 0) => new Date(now - d * 86_400_000 - h * 3_600_000).toISOString();
  const events = [];
  // Quiet for 20 days, and a detractor: critical. Steady: logs in every few days, lower.
  events.push({ event: "login", customer_email: QUIET, timestamp: daysAgo(20) });
  events.push({ event: "nps_response", customer_email: QUIET, timestamp: daysAgo(20), properties: { score: 4 } });
  for (let d = 28; d >= 1; d -= 3) {
    events.push({ event: "login", customer_email: STEADY, timestamp: daysAgo(d) });
    events.push({ event: "feature_used", customer_email: STEADY, timestamp: daysAgo(d, 1), properties: { feature: "reports" } });
  }
  await call("POST", "/track", { events }, { "x-api-key": keys.secret_key, authorization: "" });
  // Scores on several days, so the history has a line.
  await call("PUT", "/projects/acme/churn-risk/config", { enabled: false, webhook_url: "https://127.0.0.1:9/alerts" });
  for (let i = 0; i < 4; i++) {
    await call("POST", "/projects/acme/churn-risk/recompute");
    await call("POST", "/dev/jobs/run");
    await call("POST", "/dev/clock", { advance_seconds: 86_400 });
  }
  await call("POST", "/dev/jobs/run");
  await call("PUT", "/projects/acme/churn-risk/config", { enabled: true });
  await call("POST", "/projects/acme/churn-risk/recompute");
  // Every attempt is refused; the fourth leaves the alert failed.
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    await call("POST", "/dev/jobs/run");
    const { data: alerts } = await call("GET", "/projects/acme/churn-risk/alerts");
    if (alerts.some((a) => a.status === "failed")) break;
    assert.ok(Date.now() < deadline, `no alert failed: ${JSON.stringify(alerts)}`);
    await call("POST", "/dev/clock", { advance_seconds: 400 });
  }
  // A payment failure from the custom provider, signed with the project's webhook secret.
  await call("PUT", "/projects/acme/providers/custom", {});
  const { data: secret } = await call("GET", "/projects/acme/webhook-secret");
  const body = JSON.stringify({ id: "c1", type: "payment.failed", customer_email: PAYER, amount: 4900,
    currency: "usd", payment_id: "p_1", decline_code: "insufficient_funds", reason: "card declined at renewal" });
  const signature = createHmac("sha256", secret.webhook_secret).update(body).digest("hex");
  await call("POST", `/webhooks/custom/${keys.public_key}`, body, { "x-churn-signature": signature, authorization: "" });
  failureId = (await call("GET", "/projects/acme/payment-failures")).data.failures[0].id;
}

before(async () => {
  server = await startServer("customers", { CHURN_DEV_MODE: "true", CHURN_WEBHOOK_ALLOW_PRIVATE: "true" });
  base = server.base;
  await seed();
  ({ browser, page, cspViolations } = await openBrowser());
  await signIn(page, base, "Customers");
});

after(async () => {
  await browser?.close();
  server?.stop();
});

test("customers: the list, a customer's risk history and signals", async () => {
  await page.getByRole("link", { name: "Customers" }).click();
  await page.getByRole("heading", { name: "Customers" }).waitFor();
  await page.getByRole("link", { name: QUIET }).waitFor();
  await checkA11y("customers");
  await shot("customers");
  await page.getByLabel("Customer email", { exact: true }).fill("steady");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.waitForURL(/q=steady/);
  assert.equal(await page.getByRole("link", { name: QUIET }).count(), 0);
  await page.getByRole("link", { name: STEADY }).click();
  await page.getByRole("heading", { name: "Risk score, last 90 days" }).waitFor();
  assert.ok(await page.locator("svg.chart polyline.score, svg.chart circle.score").count() > 0, "a score line");
  await checkA11y("customer");
  await shot("customer");
  await page.goto(`${base}/app/p/acme/customers/${QUIET}`);
  assert.ok(await page.locator("svg.bars rect.raises").count() > 0, "signals raising the risk");
  await checkA11y("customer-quiet");
  await shot("customer-quiet");
});

test("churn risk: the configuration, the alert log, redeliver a failed alert", async () => {
  await page.getByRole("link", { name: "Churn risk" }).click();
  await page.getByRole("heading", { name: "Alert log" }).waitFor();
  const alert = page.locator("article.alert", { hasText: QUIET });
  assert.equal(await alert.locator(".badge").last().textContent(), "failed");
  await alert.getByText("4 attempts").click();
  await checkA11y("risk");
  await shot("risk");
  await alert.getByRole("button", { name: "Redeliver" }).click();
  await page.getByText("The alert is being delivered again.").waitFor();
  const again = page.locator("article.alert", { hasText: QUIET });
  assert.equal(await again.locator(".badge").last().textContent(), "pending");
  assert.equal(await again.getByRole("button", { name: "Redeliver" }).count(), 0);
  await page.getByLabel("Alert at a score of").fill("75");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("The configuration is saved.").waitFor();
  assert.equal(await page.getByLabel("Alert at a score of").inputValue(), "75");
});

test("payments: statistics, the failures, a failure's page, the dunning configuration", async () => {
  await page.getByRole("link", { name: "Payments" }).click();
  await page.getByRole("heading", { name: "Failed payments" }).waitFor();
  await page.getByRole("link", { name: PAYER }).waitFor();
  await checkA11y("payments");
  await shot("payments");
  await page.goto(`${base}/app/p/acme/payments/${failureId}`);
  await page.getByRole("heading", { name: `$49.00 from ${PAYER}` }).waitFor();
  // The custom provider without a retry URL retries on its own: no button.
  assert.equal(await page.getByRole("button", { name: "Retry the payment now" }).count(), 0);
  await checkA11y("payment");
  await shot("payment");
  await page.getByRole("link", { name: "← Payments" }).click();
  await page.getByLabel("Sender name").fill("Acme Billing");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("The dunning configuration is saved.").waitFor();
  assert.equal(await page.getByLabel("Sender name").inputValue(), "Acme Billing");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${base}/app/p/acme/customers/${STEADY}`);
  await shot("customer-phone");
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `no sideways scrolling at 390 px (page is ${width} px wide)`);
  await page.setViewportSize({ width: 1280, height: 860 });
  assert.deepEqual(cspViolations, [], "no page trips its Content-Security-Policy");
});
