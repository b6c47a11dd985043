// Segmented cancel flows in the dashboard (decisions §19, §17): a flow created on its page with
// a segment and a trial-extension offer shows in the list; its edit, delete confirmation and
// results pages open; an experiment's variants are added on the edit page, each previewed as
// it changes the flow, and saved; axe-core (no serious or critical violation) and a
// screenshot on each.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { checkPage, openBrowser, registerFounder, startServer } from "./harness.mjs";

let server, base, browser, page, cspViolations;

before(async () => {
  server = await startServer("cancel-flows");
  base = server.base;
  ({ browser, page, cspViolations } = await openBrowser());
  await registerFounder(page, base);
});

after(async () => {
  await browser?.close();
  server?.stop();
});

const check = (name) => checkPage(page, "cancel-flows", name);

test("a segmented flow is created on its page, listed, edited and its results opened", async () => {
  await page.goto(`${base}/app/p/acme/cancel-flow`);
  await page.getByRole("link", { name: "Segmented flows" }).click();
  await page.getByRole("heading", { name: "Segmented cancel flows" }).waitFor();
  await check("list-empty");
  await page.getByRole("link", { name: "New flow" }).click();
  await check("new");
  await page.getByLabel("Name", { exact: true }).fill("Yearly pros");
  await page.getByLabel("Priority (lower comes first)").fill("3");
  await page.getByLabel("Plans (comma-separated)").fill("Pro");
  await page.getByLabel("Billing interval").selectOption("year");
  // The first reason's offer becomes a trial extension: only its input shows.
  const row = page.locator("[data-prefix=''][data-row='0']");
  await row.getByLabel("Offer").selectOption("trial_extension");
  assert.equal(await row.getByLabel("Percent off").isVisible(), false);
  await row.getByLabel("Days more").fill("21");
  await page.getByRole("button", { name: "Create the flow" }).click();
  await page.getByText("The flow is created.").waitFor();
  await page.getByText("plan Pro, billed by the year").waitFor();
  await check("list");
  await page.getByRole("link", { name: "Yearly pros" }).click();
  assert.equal(await page.locator("[data-prefix=''][data-row='0']").getByLabel("Days more").inputValue(), "21");
  await check("edit");
  await page.getByRole("link", { name: "Delete this flow" }).click();
  await check("delete");
  await page.getByRole("link", { name: "Keep it" }).click();
  const url = page.url();
  await page.goto(`${url}/results?days=30`);
  await page.getByText("This flow runs no experiment").waitFor();
  await check("results");
});

test("variants are added to a flow, each previewed as it changes the flow, and saved", async () => {
  await page.goto(`${base}/app/p/acme/cancel-flows`);
  await page.getByRole("link", { name: "Yearly pros" }).click();
  // The flow's own preview, and no unused variant until one is added.
  await page.frameLocator("#preview").getByText("Before you go").waitFor();
  assert.equal(await page.locator("#v0_key").isVisible(), false);
  await page.getByRole("button", { name: "Add a variant" }).click();
  await page.locator("#v0_key").fill("control");
  await page.getByRole("button", { name: "Add a variant" }).click();
  await page.locator("#v1_key").fill("bold");
  await page.locator("#v1_weight").fill("3");
  assert.equal(await page.locator("#v2_key").isVisible(), false);

  // Bold's own heading and its own reason with a bigger discount: its preview follows, the
  // control's and the flow's stay as they were.
  const bold = page.frameLocator("[data-preview='v1_']");
  const control = page.frameLocator("[data-preview='v0_']");
  await page.locator("#v1_copy_title").fill("Wait, a better price");
  await bold.getByText("Wait, a better price").waitFor();
  assert.equal(await page.locator("[data-own='v1_']").isVisible(), false, "the flow's reasons until it has its own");
  await page.getByLabel("Its own reasons (else the flow's)").nth(1).check();
  await page.getByLabel("Its own offers (else the flow's for the reasons it shows)").nth(1).check();
  const row = page.locator("[data-prefix='v1_'][data-row='0']");
  await row.getByLabel("Label").fill("Costs too much");
  await bold.getByText("Costs too much").waitFor();
  await row.getByLabel("Offer").selectOption("discount");
  await row.getByLabel("Percent off").fill("45");
  await row.getByLabel("For months").fill("2");
  await bold.getByText("45% off").waitFor();
  await page.locator("[data-preview='v1_']").scrollIntoViewIfNeeded();
  await check("variants");
  await control.getByText("Before you go").waitFor();
  assert.equal(await control.getByText("Costs too much").count(), 0);
  assert.equal(await page.frameLocator("#preview").getByText("Wait, a better price").count(), 0);

  await page.getByRole("button", { name: "Save the flow" }).click();
  await page.getByText("The flow is saved.").waitFor();
  await page.getByText("control (1), bold (3)").waitFor();
  await page.getByRole("link", { name: "Yearly pros", exact: true }).click();
  assert.equal(await page.locator("#v1_copy_title").inputValue(), "Wait, a better price");
  // Saved, the frame opens on the variant as stored.
  await page.locator("[data-preview='v1_']").scrollIntoViewIfNeeded();
  await bold.getByText("Wait, a better price").waitFor();
  await bold.getByText("Costs too much").waitFor();
  await check("variants-saved");
  assert.deepEqual(cspViolations, []);
});
