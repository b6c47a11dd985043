// The in-app banner and the card-update page in a real browser (Debian's chromium, driven by
// playwright-core), decisions §18. A shop page on an allowed origin calls
// ChurnBanner.show for a customer its server signed: the banner appears with its link to the
// customer's card-update page, is reached and dismissed with the keyboard alone, and stays
// dismissed for the session. The card-update page of a failing, a recovered and an abandoned
// payment (custom billing, so the failing one's button is the project's update_payment_url)
// passes axe-core, trips no Content-Security-Policy, fits 390 px without sideways scrolling,
// and is photographed at desktop and phone width: <repo>/target/browser/pay-*.png and
// banner-*.png.
//
// The server, chromium, axe-core and screenshots: harness.mjs.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { bearer, callApi, checkA11y, openBrowser, screenshot, startServer } from "./harness.mjs";

const UPDATE_URL = "https://billing.acme.example/card";
const DANA = "dana@customer.example";
let server, base, browser, page, cspViolations, shop, shopOrigin, token, publicKey, identitySecret;

const call = (method, path, body, headers = {}) =>
  callApi(base, method, path, body, { ...bearer(token), ...headers });

/** A custom billing event, signed with the project's webhook secret. */
async function billingEvent(secret, event) {
  const body = JSON.stringify(event);
  const signature = createHmac("sha256", secret).update(body).digest("hex");
  const response = await fetch(`${base}/api/v1/webhooks/custom/${publicKey}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-churn-signature": signature },
    body,
  });
  assert.equal(response.status, 200, await response.text());
}

/** The customer's site: a page that shows the banner for Dana, signed by its server. */
function startShop() {
  shop = createServer((req, res) => {
    const customerHash = createHmac("sha256", identitySecret).update(DANA).digest("hex");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
      <meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title></head>
      <body><main><h1>Your account</h1><p>Welcome back, Dana.</p></main>
      <script src="${base}/widget/v1/banner.js"></script>
      <script>
        window.shown = ChurnBanner.show({ publicKey: ${JSON.stringify(publicKey)},
          customerEmail: ${JSON.stringify(DANA)}, customerHash: ${JSON.stringify(customerHash)} });
      </script></body></html>`);
  });
  return new Promise((resolvePromise) =>
    shop.listen(0, "127.0.0.1", () => resolvePromise(`http://127.0.0.1:${shop.address().port}`)),
  );
}

before(async () => {
  server = await startServer("card-update");
  base = server.base;
  token = (await call("POST", "/auth/register",
    { name: "Ada Founder", email: "ada@acme.example", password: "correct horse" })).data.token;
  const project = (await call("POST", "/projects", { name: "Acme", support_email: "support@acme.example" })).data;
  publicKey = project.api_keys.public_key;
  identitySecret = (await call("GET", "/projects/acme/identity-secret")).data.identity_secret;
  const webhookSecret = (await call("GET", "/projects/acme/webhook-secret")).data.webhook_secret;
  await call("PUT", "/projects/acme/providers/custom", {});
  await call("PATCH", "/projects/acme", { settings: { update_payment_url: UPDATE_URL } });
  await call("PUT", "/projects/acme/cancel-flow", {
    reasons: [{ code: "too_expensive", label: "It costs too much" }, { code: "other", label: "Something else" }],
    colors: { primary: "#0f766e" },
  });
  shopOrigin = await startShop();
  await call("PUT", "/projects/acme/allowed-origins", { allowed_origins: [shopOrigin] });
  const failed = (id, email, extra = {}) => billingEvent(webhookSecret, {
    id, type: "payment.failed", customer_email: email, amount: 4900, currency: "usd",
    payment_id: `p_${id}`, plan_name: "Pro", ...extra,
  });
  await failed("c1", DANA);
  await failed("c2", "paid@customer.example");
  await billingEvent(webhookSecret, { id: "c3", type: "payment.succeeded", customer_email: "paid@customer.example", payment_id: "p_c2" });
  await failed("c4", "gone@customer.example", { decline_code: "stolen_card" });
  ({ browser, page, cspViolations } = await openBrowser());
});

after(async () => {
  await browser?.close();
  shop?.close();
  server?.stop();
});

/** The card-update page of each customer's record, as the dashboard links it. */
async function pageUrls() {
  await page.goto(`${base}/app/sign-in`);
  await page.getByLabel("Email").fill("ada@acme.example");
  await page.getByLabel("Password").fill("correct horse");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/app\//);
  const { failures } = (await call("GET", "/projects/acme/payment-failures")).data;
  const urls = {};
  for (const f of failures) {
    await page.goto(`${base}/app/p/acme/payments/${f.id}`);
    urls[f.status] = await page.getByRole("link", { name: "the customer's page" }).getAttribute("href");
  }
  assert.deepEqual(Object.keys(urls).sort(), ["abandoned", "failing", "recovered"]);
  return urls;
}

test("the card-update page in each state, at desktop and phone width", async () => {
  const urls = await pageUrls();
  const expected = {
    failing: "Your payment did not go through",
    recovered: "This payment has been made",
    abandoned: "This payment can no longer be made here",
  };
  for (const [state, heading] of Object.entries(expected)) {
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.goto(urls[state]);
    await page.getByRole("heading", { name: heading }).waitFor();
    await page.getByText("49.00 USD").waitFor();
    const button = page.getByRole("link", { name: "Update payment method" });
    assert.equal(await button.count(), state === "failing" ? 1 : 0, state);
    if (state === "failing") assert.equal(await button.getAttribute("href"), UPDATE_URL);
    await checkA11y(page, `pay ${state}`);
    await screenshot(page, `pay-${state}-desktop`);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    const sideways = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    assert.equal(sideways, false, `${state} scrolls sideways at 390 px`);
    await checkA11y(page, `pay ${state} (phone)`);
    await screenshot(page, `pay-${state}-phone`);
  }
  assert.deepEqual(cspViolations, []);
});

test("the banner links to the page and is dismissed with the keyboard for the session", async () => {
  await page.setViewportSize({ width: 1280, height: 860 });
  await page.goto(shopOrigin);
  assert.equal(await page.evaluate(() => window.shown), true);
  const banner = page.getByRole("region", { name: "Payment problem" });
  await banner.waitFor();
  const link = banner.getByRole("link", { name: "Update payment method" });
  const href = await link.getAttribute("href");
  assert.match(href, /\/pay\/[^/?]+\?via=banner$/);
  await checkA11y(page, "banner");
  await screenshot(page, "banner-desktop");
  await page.setViewportSize({ width: 390, height: 844 });
  await screenshot(page, "banner-phone");

  // Tab reaches the link, then the dismiss button; Escape inside the banner dismisses it.
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.querySelector("[data-churn-banner]")
    .shadowRoot.activeElement?.textContent), "Update payment method");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.querySelector("[data-churn-banner]")
    .shadowRoot.activeElement?.getAttribute("aria-label")), "Dismiss this message");
  await page.keyboard.press("Escape");
  await banner.waitFor({ state: "detached" });
  // Dismissed for the session: the next page load shows nothing.
  await page.reload();
  assert.equal(await page.evaluate(() => window.shown), false);
  assert.equal(await page.locator("[data-churn-banner]").count(), 0);

  // The link opens the customer's page, counted as a visit from the banner.
  await page.goto(href);
  await page.getByRole("heading", { name: "Your payment did not go through" }).waitFor();
  const { failures } = (await call("GET", "/projects/acme/payment-failures?status=failing")).data;
  const detail = (await call("GET", `/projects/acme/payment-failures/${failures[0].id}`)).data;
  assert.ok(detail.page_visits.some((v) => v.via === "banner"), JSON.stringify(detail.page_visits));
  assert.deepEqual(cspViolations, []);
});
