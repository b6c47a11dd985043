// A founder's first session in a real browser (Debian's chromium, driven by playwright-core):
// register → the checklist → connect Stripe from Settings, against a loopback fake of Stripe's
// API named in the form's advanced part → allow the site's origins → shape the cancel flow,
// watching the live preview (the widget itself, in a sandboxed frame) change before saving →
// save → reload → use the widget as a signed customer would, from the allowed origin → the
// checklist ticks "add the widget" → a customer with a Stripe subscription accepts the
// discount on the founder's site, and the fake sees it applied. axe-core checks the
// cancel-flow page; no page may trip its Content-Security-Policy. Screenshots at desktop and
// phone (390 px) width go to <repo>/target/browser/first-session-*.png.
//
// The fake speaks HTTPS on loopback with a certificate from a test CA: the server is given
// that CA (CHURN_EXTRA_CA_FILE) and allowed private addresses, which a tenant's API base
// otherwise may not name. The server, chromium, axe-core and screenshots: harness.mjs.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkA11y as axe, openBrowser, screenshot, startServer, registerFounder, testCerts } from "./harness.mjs";

let server, base, browser, page, cspViolations, certDir, stripe, stripeBase, shop, shopOrigin, identitySecret, publicKey;
const checkA11y = (name) => axe(page, name);
const shot = (name) => screenshot(page, `first-session-${name}`);

const STRIPE_KEY = "rk_test_51Hxyz1234";
const DANA = "dana@customer.example";
const SUBSCRIPTION = "sub_1Dana";
const COUPON = "Z4OV52SU";
/** What the fake of Stripe received: method, path, query and form parameters, and headers. */
const stripeCalls = [];

/** Stripe's API as far as an accepted discount goes (decisions §11, §16): the subscription
 * with its customer expanded (Dana's), a new coupon, the subscription updated. Anything else
 * is a 404, and is recorded like the rest. */
function answerAsStripe(req, res) {
  let body = "";
  req.on("data", (chunk) => { body += chunk; });
  req.on("end", () => {
    const url = new URL(req.url, "https://localhost");
    stripeCalls.push({
      method: req.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      form: Object.fromEntries(new URLSearchParams(body)),
      authorization: req.headers.authorization,
      idempotencyKey: req.headers["idempotency-key"],
    });
    const subscription = `/v1/subscriptions/${SUBSCRIPTION}`;
    let answer;
    if (req.method === "GET" && url.pathname === subscription && url.searchParams.get("expand[]") === "customer") {
      answer = { id: SUBSCRIPTION, object: "subscription", status: "active",
        customer: { id: "cus_1Dana", object: "customer", email: DANA } };
    } else if (req.method === "POST" && url.pathname === "/v1/coupons") {
      answer = { id: COUPON, object: "coupon", percent_off: 40, duration: "repeating", duration_in_months: 3 };
    } else if (req.method === "POST" && url.pathname === subscription) {
      answer = { id: SUBSCRIPTION, object: "subscription", status: "active" };
    }
    res.writeHead(answer ? 200 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify(answer ?? { error: { type: "invalid_request_error", message: "not faked" } }));
  });
}

/** The founder's site: a page that embeds the widget from churn for Dana, signed in, with her
 * Stripe subscription and the hash the site's server makes over `email|subscription_id`. */
function answerAsShop(req, res) {
  const customerHash = createHmac("sha256", identitySecret).update(`${DANA}|${SUBSCRIPTION}`).digest("hex");
  res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
  res.end(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Acme account</title></head>
    <body><h1>Your account</h1><button id="open" type="button">Cancel subscription</button>
    <script src="${base}/widget/v1/cancel-flow.js"></script>
    <script>
      document.getElementById("open").addEventListener("click", () => {
        ChurnCancelFlow.open({ publicKey: ${JSON.stringify(publicKey)}, customerEmail: ${JSON.stringify(DANA)},
          customerHash: ${JSON.stringify(customerHash)}, subscriptionId: ${JSON.stringify(SUBSCRIPTION)},
          planName: "Pro", mrr: 4900 }).then((r) => { window.result = r; });
      });
    </script></body></html>`);
}

const listen = (s) => new Promise((resolve) => s.listen(0, "127.0.0.1", () => resolve(s.address().port)));

/** The flow the widget gets from the service, as a server-side caller (no Origin) sees it. */
async function servedFlow(publicKey) {
  const response = await fetch(`${base}/api/v1/cancel-flow/config/${publicKey}`);
  assert.equal(response.status, 200);
  return (await response.json()).data;
}

before(async () => {
  certDir = mkdtempSync(join(tmpdir(), "churn-first-session-cert-"));
  const { key, cert, ca } = testCerts(certDir);
  stripe = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, answerAsStripe);
  stripeBase = `https://localhost:${await listen(stripe)}`;
  shop = createHttpServer(answerAsShop);
  shopOrigin = `http://127.0.0.1:${await listen(shop)}`;
  server = await startServer("first-session", {
    CHURN_WEBHOOK_ALLOW_PRIVATE: "true",
    CHURN_EXTRA_CA_FILE: ca,
  });
  base = server.base;
  ({ browser, page, cspViolations } = await openBrowser());
});

after(async () => {
  await browser?.close();
  server?.stop();
  stripe?.close();
  shop?.close();
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

test("a first session: Stripe, an allowed origin, the cancel flow with its live preview, the widget used", async () => {
  await registerFounder(page, base);
  assert.equal(await page.locator(".checklist > li.done").count(), 0);

  // Connect Stripe from Settings: the checklist's first step, against the fake, named in the
  // form's advanced part (closed until opened).
  await page.getByRole("link", { name: "Settings", exact: true }).click();
  identitySecret = await page.locator("#identity-secret").textContent();
  const stripeForm = page.locator("article.provider").first();
  await stripeForm.getByLabel(/Restricted API key/).fill(STRIPE_KEY);
  await stripeForm.getByLabel(/Webhook signing secret/).fill("whsec_test_abcd");
  const apiBase = stripeForm.getByLabel(/API base URL/);
  assert.equal(await apiBase.isVisible(), false, "the advanced part starts closed");
  await stripeForm.getByText("Advanced: a Stripe-compatible test server (e.g. stripe-mock)").click();
  await apiBase.fill(stripeBase);
  await shot("connect-stripe");
  await stripeForm.getByRole("button", { name: "Connect Stripe" }).click();
  await page.getByText("The provider is connected.").waitFor();
  assert.equal(await page.locator("article.provider").first().getByLabel(/API base URL/).inputValue(), stripeBase,
    "the form shows the test server it will send again");
  assert.deepEqual(stripeCalls, [], "connecting calls nothing");
  await page.getByRole("link", { name: "Overview", exact: true }).click();
  assert.equal(await page.locator(".checklist > li.done").count(), 1);

  // The widget's step leads to the Cancel flow page.
  await page.locator(".checklist").getByRole("link", { name: "Cancel flow" }).click();
  await page.getByRole("heading", { name: "Cancel flow", level: 1 }).waitFor();
  publicKey = (await page.locator("#widget-snippet").textContent()).match(/publicKey: "(pub_[^"]+)"/)[1];
  const hash = (await page.getByText("this project's identity secret gives").textContent()).match(/[0-9a-f]{64}/)[0];
  assert.equal(await page.getByRole("button", { name: "Copy the snippet" }).isVisible(), true);

  // Allow this server's origin and the founder's site, where the widget is used below.
  const origins = `${base}\n${shopOrigin}`;
  await page.getByRole("textbox", { name: "Allowed origins" }).fill(origins);
  await page.getByRole("button", { name: "Save the origins" }).click();
  await page.getByText("The allowed origins are saved.").waitFor();
  assert.equal(await page.getByRole("textbox", { name: "Allowed origins" }).inputValue(), origins);

  // The preview runs the widget on the saved flow, then follows the form before any save.
  const preview = page.frameLocator("#preview");
  await preview.getByText("It is too expensive").waitFor();
  await page.locator("#label_0").fill("Too pricey for us");
  await preview.getByText("Too pricey for us").waitFor();
  await page.locator("#percent_0").fill("40");
  await preview.getByText("Stay and get 40% off for the next 3 months.").waitFor();
  await page.locator("#color_primary").fill("#b91c1c");
  const primary = preview.locator("button.primary");
  await primary.waitFor();
  assert.equal(await primary.evaluate((b) => getComputedStyle(b).backgroundColor), "rgb(185, 28, 28)");
  assert.equal(await page.locator("#percent_0").evaluate((el) => document.activeElement === el), false,
    "the colour input keeps the focus, not the preview");
  assert.equal(await page.locator("#max_months_0").isVisible(), false, "a discount hides the pause's input");
  const unsaved = await servedFlow(publicKey);
  assert.equal(unsaved.reasons[0].label, "It is too expensive", "nothing is saved yet");
  await checkA11y("cancel-flow");
  await shot("cancel-flow");

  await page.getByRole("button", { name: "Save the cancel flow" }).click();
  await page.getByText("The cancel flow is saved").waitFor();
  await page.reload();
  assert.equal(await page.locator("#label_0").inputValue(), "Too pricey for us");
  assert.equal(await page.locator("#percent_0").inputValue(), "40");
  assert.equal(await page.locator("#color_primary").inputValue(), "#b91c1c");
  await preview.getByText("Too pricey for us").waitFor();
  const saved = await servedFlow(publicKey);
  assert.equal(saved.reasons[0].label, "Too pricey for us");
  assert.deepEqual(saved.offers.too_expensive, { kind: "discount", percent: 40, months: 3 });
  assert.equal(saved.colors.primary, "#b91c1c");

  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  // Frames of another origin are painted once in view: show the preview, then take the page.
  await page.locator("#preview").scrollIntoViewIfNeeded();
  await preview.getByText("Too pricey for us").waitFor();
  await checkA11y("cancel-flow-phone");
  await shot("cancel-flow-phone");
  assert.equal(
    await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
    true,
    "nothing overflows sideways at 390 px",
  );
  await page.setViewportSize({ width: 1280, height: 860 });

  // A signed customer opens the widget on a page of the allowed origin: the open is counted.
  await page.goto(`${base}/widget/v1/demo?key=${publicKey}`);
  await page.evaluate(({ key, hash }) => {
    window.ChurnCancelFlow.open({ publicKey: key, customerEmail: "jane@example.com", customerHash: hash });
  }, { key: publicKey, hash });
  const dialog = page.getByRole("dialog");
  await dialog.getByText("Too pricey for us").waitFor();
  await page.keyboard.press("Escape");
  await dialog.waitFor({ state: "detached" });

  await page.goto(`${base}/app/p/acme`);
  await page.getByRole("heading", { name: "Set up Acme" }).waitFor();
  const steps = page.locator(".checklist > li");
  assert.equal(await steps.nth(1).getAttribute("class"), "done", "the widget step is ticked");
  assert.equal(await page.locator(".checklist > li.done").count(), 2);
  await shot("checklist-ticked");

  // Dana, signed in on the founder's site with her Stripe subscription, takes the saved
  // discount: churn reads the subscription (hers), makes the coupon and puts it on it.
  await page.goto(shopOrigin);
  await page.click("#open");
  const widget = page.getByRole("dialog");
  await widget.getByRole("radio", { name: "Too pricey for us" }).check();
  await widget.getByRole("button", { name: "Continue" }).click();
  await widget.getByText("Stay and get 40% off for the next 3 months.").waitFor();
  await widget.getByRole("button", { name: "Accept offer" }).click();
  await widget.getByRole("status").filter({ hasText: "Thank you for staying! Your offer is on its way." }).waitFor();
  await shot("offer-applied");
  await widget.getByRole("button", { name: "Close" }).click();
  await page.waitForFunction(() => window.result !== undefined);
  const result = await page.evaluate(() => window.result);
  assert.equal(result.outcome, "saved");
  assert.deepEqual(result.offer, { kind: "discount", percent: 40, months: 3, applied: true },
    "the widget is told the offer is applied");

  const eventId = result.churnEventId;
  assert.deepEqual(stripeCalls.map(({ method, path, query, form }) => ({ method, path, query, form })), [
    { method: "GET", path: `/v1/subscriptions/${SUBSCRIPTION}`, query: { "expand[]": "customer" }, form: {} },
    { method: "POST", path: "/v1/coupons", query: {}, form: {
      percent_off: "40", duration: "repeating", duration_in_months: "3", "metadata[churn_event_id]": eventId } },
    { method: "POST", path: `/v1/subscriptions/${SUBSCRIPTION}`, query: {}, form: { "discounts[0][coupon]": COUPON } },
  ]);
  for (const call of stripeCalls) {
    assert.equal(call.authorization, `Bearer ${STRIPE_KEY}`, "the key stored from the form");
    if (call.method === "POST") assert.ok(call.idempotencyKey, `${call.path} carries an Idempotency-Key`);
  }

  // The event, in the dashboard and through the API: recovered by the cancel flow, the offer
  // applied at Stripe.
  await page.goto(`${base}/app/p/acme/events/${eventId}`);
  await page.getByRole("heading", { name: DANA, level: 1 }).waitFor();
  await page.getByText("Recovered (via cancel flow)").waitFor();
  await page.getByText("The accepted offer applied at the payment provider").waitFor();
  await shot("event-offer-applied");
  const login = await fetch(`${base}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "ada@acme.example", password: "correct horse" }),
  });
  assert.equal(login.status, 200);
  const { token } = (await login.json()).data;
  const answer = await fetch(`${base}/api/v1/projects/acme/churn-events/${eventId}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(answer.status, 200);
  const event = (await answer.json()).data;
  assert.equal(event.status, "recovered");
  assert.equal(event.recovered_via, "cancel_flow");
  assert.equal(event.reason_code, "too_expensive");
  assert.equal(event.offer_error, null);
  assert.ok(event.offer_applied_at, "the offer is applied");

  assert.deepEqual(cspViolations, []);
});
