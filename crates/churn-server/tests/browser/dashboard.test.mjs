// The dashboard in a real browser (Debian's chromium, driven by playwright-core): a first
// session (register → the checklist → sign out → sign in), an event journey (open an event
// seeded through the API, read the ranked variants, edit a draft, send it, see it sent), the
// overview at desktop and phone (390 px) width. axe-core checks every page for serious or
// critical violations, and no page may trip its Content-Security-Policy. Screenshots go to
// <repo>/target/browser/.
//
// The server, chromium, axe-core and screenshots: harness.mjs.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { bearer, callApi, checkA11y as axe, openBrowser, screenshot, startServer, submitRegistration } from "./harness.mjs";

let server, base, browser, page, cspViolations;
const checkA11y = (name) => axe(page, name);
const shot = (name) => screenshot(page, `dashboard-${name}`);

const call = (method, path, body, token) => callApi(base, method, path, body, bearer(token));

before(async () => {
  server = await startServer("dashboard");
  base = server.base;
  ({ browser, page, cspViolations } = await openBrowser());
});

after(async () => {
  await browser?.close();
  server?.stop();
});

test("a first session: register, the checklist, sign out, sign in", async () => {
  await page.goto(`${base}/`);
  assert.match(page.url(), /\/app\/sign-in$/);
  await checkA11y("sign-in");
  await shot("sign-in");
  await page.getByRole("link", { name: "Create an account" }).click();
  await checkA11y("register");
  await submitRegistration(page);
  assert.match(page.url(), /\/app\/p\/acme$/);
  assert.equal(await page.locator(".checklist > li.done").count(), 0);
  await checkA11y("checklist");
  await shot("checklist");

  await page.getByRole("button", { name: "Sign out", exact: true }).click();
  await page.getByText("You are signed out.").waitFor();
  await page.goto(`${base}/app/forgot-password`);
  await checkA11y("forgot-password");
  await page.goto(`${base}/app/sign-in`);
  await page.getByLabel("Email").fill("ada@acme.example");
  await page.getByLabel("Password").fill("correct horse");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Set up Acme" }).waitFor();
});

test("an event: ranked variants, edit a draft, send it, see it sent", async () => {
  const { data: session } = await call("POST", "/auth/login", { email: "ada@acme.example", password: "correct horse" });
  const { data: event } = await call("POST", "/projects/acme/churn-events", {
    customer_email: "dana@customer.example", customer_name: "Dana", event_type: "cancellation",
    cancel_reason: "too_expensive", mrr: 4900, currency: "usd", plan_name: "Pro",
  }, session.token);
  await call("POST", `/projects/acme/churn-events/${event.id}/generate`, undefined, session.token);

  await page.getByRole("link", { name: "Churn events", exact: true }).click();
  await page.getByRole("link", { name: "dana@customer.example" }).waitFor();
  await checkA11y("events");
  await shot("events");
  await page.getByRole("link", { name: "dana@customer.example" }).click();
  const cards = page.locator("article.variant");
  // count() does not wait: let the page finish arriving first.
  await cards.nth(8).waitFor();
  await page.waitForLoadState("load");
  assert.equal(await cards.count(), 9);
  const ranks = await cards.locator("h3").allTextContents();
  assert.deepEqual(ranks.map((r) => Number(r.match(/#(\d)/)[1])), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  await checkA11y("event");
  await shot("event");

  const first = cards.first();
  await first.getByText("Edit the draft").click();
  await first.getByLabel("Subject").fill("Dana, a better price for you");
  await first.getByRole("button", { name: "Save the draft" }).click();
  await page.getByText("The draft is saved.").waitFor();
  await page.locator("article.variant").first().getByRole("button", { name: /^Send to/ }).click();
  await page.getByText("The email is sent.").waitFor();
  const sent = page.locator("article.variant").first();
  assert.equal(await sent.locator("header .badge").last().textContent(), "sent");
  await page.getByText("Sent “Dana, a better price for you”").waitFor();
  await shot("event-sent");
});

test("the overview at desktop and phone width", async () => {
  await page.getByRole("link", { name: "Overview" }).click();
  await page.getByRole("heading", { name: /Overview/ }).waitFor();
  await page.getByRole("link", { name: "90 days" }).click();
  assert.match(page.url(), /period=90$/);
  assert.equal(await page.locator(".tile").count(), 5);
  await checkA11y("overview");
  await shot("overview");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await shot("overview-phone");
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  const wide = await page.evaluate(() => [...document.querySelectorAll("body *")]
    .filter((e) => e.getBoundingClientRect().right > 390)
    .slice(0, 5)
    .map((e) => `${e.tagName.toLowerCase()}.${e.className}`));
  assert.ok(width <= 390, `no sideways scrolling at 390 px (page is ${width} px wide: ${wide.join(", ")})`);
  assert.equal(await page.locator("#rail").isVisible(), false, "the rail is folded");
  await checkA11y("overview-phone");
  await page.getByRole("link", { name: "Menu" }).click();
  await page.getByRole("link", { name: "Churn events", exact: true }).waitFor();
  await shot("menu-phone");
  await page.setViewportSize({ width: 1280, height: 860 });
  assert.deepEqual(cspViolations, [], "no page trips its Content-Security-Policy");
});
