// Segmented cancel flows in the dashboard (decisions §19, §17): a flow created on its page with
// a segment and a trial-extension offer shows in the list; its edit, delete confirmation and
// results pages open; axe-core (no serious or critical violation) and a screenshot on each.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { checkA11y, openBrowser, registerFounder, screenshot, startServer } from "./harness.mjs";

let server, base, browser, page;

before(async () => {
  server = await startServer("cancel-flows");
  base = server.base;
  ({ browser, page } = await openBrowser());
  await registerFounder(page, base);
});

after(async () => {
  await browser?.close();
  server?.stop();
});

async function check(name) {
  await page.waitForLoadState("load");
  await checkA11y(page, name);
  await screenshot(page, `cancel-flows-${name}`);
}

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
  const row = page.locator("[data-row='0']");
  await row.getByLabel("Offer").selectOption("trial_extension");
  assert.equal(await row.getByLabel("Percent off").isVisible(), false);
  await row.getByLabel("Days more").fill("21");
  await page.getByRole("button", { name: "Create the flow" }).click();
  await page.getByText("The flow is created.").waitFor();
  await page.getByText("plan Pro, billed by the year").waitFor();
  await check("list");
  await page.getByRole("link", { name: "Yearly pros" }).click();
  assert.equal(await page.locator("[data-row='0']").getByLabel("Days more").inputValue(), "21");
  await check("edit");
  await page.getByRole("link", { name: "Delete this flow" }).click();
  await check("delete");
  await page.getByRole("link", { name: "Keep it" }).click();
  const url = page.url();
  await page.goto(`${url}/results?days=30`);
  await page.getByText("This flow runs no experiment").waitFor();
  await check("results");
});
