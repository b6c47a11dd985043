// A founder's first session in a real browser (Debian's chromium, driven by playwright-core):
// register → the checklist → connect Stripe from Settings → allow the site's origin → shape
// the cancel flow, watching the live preview (the widget itself, in a sandboxed frame) change
// before saving → save → reload → use the widget as a signed customer would, from the allowed
// origin → the checklist ticks "add the widget". axe-core checks the cancel-flow page; no page
// may trip its Content-Security-Policy. Screenshots at desktop and phone (390 px) width go to
// <repo>/target/browser/first-session-*.png.
//
// The server, chromium, axe-core and screenshots: harness.mjs.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { checkA11y as axe, openBrowser, screenshot, startServer, registerFounder } from "./harness.mjs";

let server, base, browser, page, cspViolations;
const checkA11y = (name) => axe(page, name);
const shot = (name) => screenshot(page, `first-session-${name}`);

/** The flow the widget gets from the service, as a server-side caller (no Origin) sees it. */
async function servedFlow(publicKey) {
  const response = await fetch(`${base}/api/v1/cancel-flow/config/${publicKey}`);
  assert.equal(response.status, 200);
  return (await response.json()).data;
}

before(async () => {
  server = await startServer("first-session");
  base = server.base;
  ({ browser, page, cspViolations } = await openBrowser());
});

after(async () => {
  await browser?.close();
  server?.stop();
});

test("a first session: Stripe, an allowed origin, the cancel flow with its live preview, the widget used", async () => {
  await registerFounder(page, base);
  assert.equal(await page.locator(".checklist > li.done").count(), 0);

  // Connect Stripe from Settings: the checklist's first step.
  await page.getByRole("link", { name: "Settings", exact: true }).click();
  const stripe = page.locator("article.provider").first();
  await stripe.getByLabel(/Restricted API key/).fill("rk_test_51Hxyz1234");
  await stripe.getByLabel(/Webhook signing secret/).fill("whsec_test_abcd");
  await stripe.getByRole("button", { name: "Connect Stripe" }).click();
  await page.getByText("The provider is connected.").waitFor();
  await page.getByRole("link", { name: "Overview", exact: true }).click();
  assert.equal(await page.locator(".checklist > li.done").count(), 1);

  // The widget's step leads to the Cancel flow page.
  await page.locator(".checklist").getByRole("link", { name: "Cancel flow" }).click();
  await page.getByRole("heading", { name: "Cancel flow", level: 1 }).waitFor();
  const publicKey = (await page.locator("#widget-snippet").textContent()).match(/publicKey: "(pub_[^"]+)"/)[1];
  const hash = (await page.getByText("this project's identity secret gives").textContent()).match(/[0-9a-f]{64}/)[0];
  assert.equal(await page.getByRole("button", { name: "Copy the snippet" }).isVisible(), true);

  // Allow this server's origin, where the widget will be used below.
  await page.getByRole("textbox", { name: "Allowed origins" }).fill(base);
  await page.getByRole("button", { name: "Save the origins" }).click();
  await page.getByText("The allowed origins are saved.").waitFor();
  assert.equal(await page.getByRole("textbox", { name: "Allowed origins" }).inputValue(), base);

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

  assert.deepEqual(cspViolations, []);
});
