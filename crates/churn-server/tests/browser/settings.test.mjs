// Settings, Team and Account in a real browser (Debian's chromium, driven by playwright-core):
// the owner connects Stripe (connecting stores the credentials and shows the webhook URL and
// the events to enable; churn calls Stripe only later, so no fake of it is needed here),
// replaces the secret key and sees it once (a reload rotates nothing), invites a teammate as a viewer, who accepts in a
// second browser context and lands in the project, where the viewer sees no write controls.
// axe-core checks every new page; no page may trip its Content-Security-Policy. Screenshots
// go to <repo>/target/browser/settings-*.png.
//
// The server, chromium, axe-core and screenshots: harness.mjs.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { DEADLINE_MS, bearer, callApi, checkA11y as axe, openBrowser, screenshot, startServer, registerFounder } from "./harness.mjs";

let server, base, browser, page, cspViolations;
const checkA11y = (name) => axe(page, name);
const shot = (name) => screenshot(page, `settings-${name}`);

const call = (method, path, body, token) => callApi(base, method, path, body, bearer(token));

before(async () => {
  server = await startServer("settings");
  base = server.base;
  ({ browser, page, cspViolations } = await openBrowser());
});

after(async () => {
  await browser?.close();
  server?.stop();
});


test("settings: connect Stripe, replace the secret key once, copy buttons", async () => {
  await registerFounder(page, base);

  await page.getByRole("link", { name: "Settings", exact: true }).click();
  await page.getByRole("heading", { name: "Settings", level: 1 }).waitFor();
  assert.equal(await page.locator("button[data-copy='public-key']").isVisible(), true, "copy.js shows the copy buttons");
  const stripe = page.locator("article.provider").first();
  await stripe.getByText("Events to enable there").click();
  await stripe.getByText("invoice.payment_failed").waitFor();
  await checkA11y("settings");
  await shot("page");

  await stripe.getByLabel(/Restricted API key/).fill("rk_test_51Hxyz1234");
  await stripe.getByLabel(/Webhook signing secret/).fill("whsec_test_abcd");
  await stripe.getByRole("button", { name: "Connect Stripe" }).click();
  await page.getByText("The provider is connected.").waitFor();
  const connected = page.locator("article.provider").first();
  await connected.getByText("connected", { exact: true }).waitFor();
  assert.match(await connected.locator("code[id^=webhook-url]").textContent(), /\/api\/v1\/webhooks\/stripe\/pub_/);

  const publicKey = await page.locator("#public-key").textContent();
  await page.getByRole("button", { name: "Replace the secret key" }).click();
  await page.getByRole("heading", { name: "New secret key" }).waitFor();
  const secret = await page.locator("#shown-value").textContent();
  assert.match(secret, /^(sk|sec)_/);
  assert.equal(await page.locator("#public-key").textContent(), publicKey, "the public key stays");
  await checkA11y("settings-rotated");
  await shot("secret-shown");
  const hint = () => page.locator("#keys p", { hasText: "ends in" }).locator("code").textContent();
  assert.ok(secret.endsWith(await hint()));
  // A reload repeats the GET the rotation redirected to: no secret, no second rotation.
  await page.reload();
  await page.getByText("The new secret key was shown once").waitFor();
  assert.equal(await page.getByText(secret).count(), 0, "the secret is shown once");
  assert.ok(secret.endsWith(await hint()), "a reload rotates nothing");
  await shot("secret-reloaded");
  await page.goto(`${base}/app/p/acme/settings`);
  assert.equal(await page.getByText(secret).count(), 0, "the secret is shown once");

  await page.getByRole("link", { name: "Suppressions" }).click();
  await page.getByRole("heading", { name: "Suppressions" }).waitFor();
  await checkA11y("suppressions");
  await page.goto(`${base}/app/account`);
  await page.getByRole("heading", { name: "Your account" }).waitFor();
  await checkA11y("account");
  await shot("account");
});

test("team: invite a viewer, who accepts in another browser and sees no write controls", async () => {
  await page.goto(`${base}/app/p/acme/team`);
  await page.getByLabel("Email", { exact: true }).fill("vic@acme.example");
  await page.getByLabel("Role").selectOption("viewer");
  await page.getByRole("button", { name: "Send the invitation" }).click();
  await page.getByText("Invitation link for vic@acme.example").waitFor();
  const link = await page.locator("#invitation-link").textContent();
  await checkA11y("team");
  await shot("team");

  const other = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const vic = await other.newPage();
  vic.setDefaultTimeout(DEADLINE_MS);
  vic.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  await vic.goto(link);
  await vic.getByLabel("Your name").fill("Vic Viewer");
  await vic.getByLabel(/Choose a password/).fill("correct horse");
  await vic.getByRole("button", { name: "Create my account and join" }).click();
  await vic.waitForURL(/\/app\/p\/acme$/).catch(async (e) => { throw new Error(`${vic.url()}: ${(await vic.content()).slice(0, 1500)}`); });
  await vic.locator(".switcher .badge", { hasText: "viewer" }).waitFor();
  await vic.goto(`${base}/app/p/acme/team`);
  for (const control of ["Change the role", "Send the invitation", "Revoke"]) {
    assert.equal(await vic.getByRole("button", { name: new RegExp(control) }).count(), 0, `no ${control}`);
  }
  await vic.getByRole("cell", { name: "Vic Viewer" }).waitFor();
  await vic.goto(`${base}/app/p/acme/settings`);
  assert.equal(await vic.getByRole("button").filter({ hasText: /Save|Connect|Replace|Verify/ }).count(), 0,
    "the viewer sees no write controls in settings");
  await screenshot(vic, "settings-viewer");
  await other.close();

  // The reload repeats the GET the invitation redirected to: the link is not shown again.
  await page.reload();
  await page.getByRole("cell", { name: "vic@acme.example", exact: true }).waitFor();
  assert.equal(await page.locator("#invitation-link").count(), 0);
  await page.getByText("Its link was shown once").waitFor();
  assert.deepEqual(cspViolations, [], "no page trips its Content-Security-Policy");
});
