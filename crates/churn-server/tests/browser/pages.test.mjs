// Every page of the dashboard in a real browser (Debian's chromium, driven by playwright-core),
// for what the other files do not walk through: axe-core (no serious or critical violation)
// and a screenshot at desktop and at phone width (390 px, with no sideways scrolling) of each
// page, the pages behind emailed links and the error page included; and a keyboard pass —
// from the overview, Tab alone reaches the rail, the period picker, the search and a list's
// "Export CSV", each with a visible focus ring; on an event page a draft is edited and sent
// with the keyboard only. No page may trip its Content-Security-Policy. Screenshots go to
// <repo>/target/browser/pages-*.png.
//
// The server, chromium, axe-core and screenshots: harness.mjs.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { bearer, callApi, checkA11y, checkPage, openBrowser, screenshot, startServer } from "./harness.mjs";

let server, base, browser, page, cspViolations, eventId, invitationLink;

const call = (method, path, body, token) => callApi(base, method, path, body, bearer(token));

before(async () => {
  server = await startServer("pages");
  base = server.base;
  const { data: session } = await call("POST", "/auth/register",
    { name: "Ada Founder", email: "ada@acme.example", password: "correct horse" });
  await call("POST", "/projects", { name: "Acme", support_email: "support@acme.example" }, session.token);
  const { data: event } = await call("POST", "/projects/acme/churn-events", {
    customer_email: "dana@customer.example", customer_name: "Dana", event_type: "cancellation",
    cancel_reason: "too_expensive", mrr: 4900, currency: "usd", plan_name: "Pro",
  }, session.token);
  eventId = event.id;
  await call("POST", `/projects/acme/churn-events/${eventId}/generate`, undefined, session.token);
  const { data: invitation } = await call("POST", "/projects/acme/invitations",
    { email: "vic@acme.example", role: "viewer" }, session.token);
  invitationLink = invitation.accept_url;
  ({ browser, page, cspViolations } = await openBrowser());
});

after(async () => {
  await browser?.close();
  server?.stop();
});

/** axe and a screenshot at both widths; at 390 px nothing may stick out sideways. */
async function check(name) {
  await checkPage(page, "pages", name);
  await page.setViewportSize({ width: 390, height: 844 });
  const wide = await page.evaluate(() => [...document.querySelectorAll("body *")]
    .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
    .filter((e) => !e.closest(".table-wrap, pre, .visually-hidden, .skip"))
    .slice(0, 5)
    .map((e) => `${e.tagName.toLowerCase()}.${e.className}`));
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390 && wide.length === 0, `${name} at 390 px is ${width} px wide: ${wide.join(", ")}`);
  await checkA11y(page, `${name}-phone`);
  await screenshot(page, `pages-${name}-phone`);
  await page.setViewportSize({ width: 1280, height: 860 });
}

test("signed out: sign-in, register, forgot, and the pages behind emailed links", async () => {
  for (const [name, path] of [
    ["sign-in", "/app/sign-in"],
    ["register", "/app/register"],
    ["forgot-password", "/app/forgot-password"],
    ["reset-password", "/reset-password?token=from-the-email"],
    ["verify-email", "/verify-email?token=from-the-email"],
    ["link-without-token", "/reset-password"],
  ]) {
    await page.goto(`${base}${path}`);
    await check(name);
  }
  await page.goto(invitationLink);
  await page.getByRole("heading", { name: "Join a project on churn" }).waitFor();
  await check("invitation");
  // A wrong password keeps the invitation open and says why.
  await page.getByLabel("Password", { exact: true }).fill("not the password");
  await page.getByRole("button", { name: "Sign in and join" }).click();
  await page.getByRole("alert").waitFor();
  await check("invitation-refused");
});

test("signed in: every page of a project, the account and the error page", async () => {
  await page.goto(`${base}/app/sign-in`);
  await page.getByLabel("Email").fill("ada@acme.example");
  await page.getByLabel("Password").fill("correct horse");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("link", { name: "Churn events", exact: true }).waitFor();
  for (const [name, path] of [
    ["overview", "/app/p/acme"],
    ["events", "/app/p/acme/events"],
    ["event", `/app/p/acme/events/${eventId}`],
    ["customers", "/app/p/acme/customers"],
    ["customer", "/app/p/acme/customers/dana@customer.example"],
    ["risk", "/app/p/acme/risk"],
    ["payments", "/app/p/acme/payments"],
    ["settings", "/app/p/acme/settings"],
    ["suppressions", "/app/p/acme/settings/suppressions"],
    ["team", "/app/p/acme/team"],
    ["account", "/app/account"],
    ["not-found", "/app/p/acme/nowhere"],
  ]) {
    await page.goto(`${base}${path}`);
    await check(name);
  }
});

/** Tabs until `target` has focus (at most `limit` presses); answers the presses it took. */
async function tabTo(target, limit = 60) {
  for (let presses = 1; presses <= limit; presses++) {
    await page.keyboard.press("Tab");
    if (await target.evaluate((e) => e === document.activeElement)) return presses;
  }
  assert.fail(`Tab never reached ${target}`);
}

/** The focused element shows a ring: a solid outline at least 2 px wide, not transparent. */
async function assertFocusRing(what) {
  const ring = await page.evaluate(() => {
    const style = getComputedStyle(document.activeElement);
    return { style: style.outlineStyle, width: parseFloat(style.outlineWidth), color: style.outlineColor };
  });
  assert.ok(ring.style !== "none" && ring.width >= 2 && !/rgba\(.*, 0\)$/.test(ring.color),
    `${what} shows a focus ring: ${JSON.stringify(ring)}`);
}

test("the keyboard alone reaches the rail, the period picker, the search and Export CSV", async () => {
  await page.setViewportSize({ width: 1280, height: 860 });
  await page.goto(`${base}/app/p/acme`);
  await page.locator("body").focus();
  for (const [what, target] of [
    ["the rail", page.locator("#rail nav a", { hasText: "Churn events" })],
    ["the rail", page.locator("#rail nav a", { hasText: "Team" })],
    ["the search", page.locator("#search")],
    ["the period picker", page.locator(".periods a", { hasText: "90 days" })],
  ]) {
    await tabTo(target);
    await assertFocusRing(what);
  }
  await page.keyboard.press("Enter");
  await page.waitForURL(/period=90$/);

  await page.goto(`${base}/app/p/acme/events`);
  const csv = page.getByRole("link", { name: "Export CSV" });
  await tabTo(csv);
  await assertFocusRing("Export CSV");
  const download = page.waitForEvent("download");
  await page.keyboard.press("Enter");
  assert.match((await download).suggestedFilename(), /\.csv$/);
});

test("on an event page a draft is edited and sent with the keyboard only", async () => {
  await page.goto(`${base}/app/p/acme/events/${eventId}`);
  await page.locator("article.variant").nth(8).waitFor();
  const first = page.locator("article.variant").first();
  await page.locator("body").focus();
  await tabTo(first.locator("summary", { hasText: "Edit the draft" }), 120);
  await assertFocusRing("Edit the draft");
  await page.keyboard.press("Enter");
  await tabTo(first.getByLabel("Subject"));
  await assertFocusRing("the subject");
  await page.keyboard.press("ControlOrMeta+A");
  await page.keyboard.type("Dana, typed without a mouse");
  await tabTo(first.getByRole("button", { name: "Save the draft" }));
  await assertFocusRing("Save the draft");
  await page.keyboard.press("Enter");
  await page.getByText("The draft is saved.").waitFor();

  await page.locator("body").focus();
  const send = page.locator("article.variant").first().getByRole("button", { name: /^Send to/ });
  await tabTo(send, 120);
  await assertFocusRing("Send");
  await page.keyboard.press("Enter");
  await page.getByText("The email is sent.").waitFor();
  await page.getByText("Sent “Dana, typed without a mouse”").waitFor();
  await screenshot(page, "pages-event-sent-by-keyboard");
  assert.deepEqual(cspViolations, [], "no page trips its Content-Security-Policy");
});
