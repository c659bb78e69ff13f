import { expect, test, type Page } from '@playwright/test';
import { api, axe, base, recordViolations, policyViolations, shot, signIn, watchPolicy } from './helpers';

const node = (page: Page, name: string) => page.getByTestId(`node-${name}`);
const wrapperOf = (page: Page, testId: string) => page.locator('.react-flow__node', { has: page.getByTestId(testId) });

async function connect(page: Page, from: string, to: string, handle: string) {
  const source = page.getByTestId(from).locator('.react-flow__handle.source');
  const target = page.getByTestId(to).locator(`.react-flow__handle[data-handleid="${handle}"]`);
  await source.dragTo(target);
}

async function rename(page: Page, name: string) {
  const field = page.getByTestId('node-name');
  await field.fill(name);
  await field.press('Enter');
}

test('a workflow built on an empty canvas saves what discovery then shows', async ({ page }) => {
  await recordViolations(page);
  const errors = watchPolicy(page);
  await signIn(page);
  await page.goto(`${base()}/console/editor`);
  const canvas = page.getByTestId('canvas');
  await page.getByTestId('palette-upscale').dragTo(canvas, { targetPosition: { x: 200, y: 80 } });
  await page.getByTestId('palette-background_removal').dragTo(canvas, { targetPosition: { x: 200, y: 380 } });
  await page.getByTestId('palette-reframe').dragTo(canvas, { targetPosition: { x: 520, y: 80 } });
  await expect(node(page, 'Upscale')).toBeVisible();
  await expect(node(page, 'Background_Removal')).toBeVisible();
  await expect(node(page, 'Reframe')).toBeVisible();
  await page.getByTestId('add-variable').click();
  await rename(page, 'look');
  await page.getByTestId('add-output').click();
  await rename(page, 'hero');
  await page.getByTestId('add-output').click();
  await rename(page, 'cutout');
  await page.getByRole('button', { name: 'Auto-layout' }).click();
  await page.waitForTimeout(400);

  // A link, then the links that would be wrong: refused, with the reason on the node.
  await connect(page, 'node-Upscale', 'node-Reframe', 'image');
  await connect(page, 'node-Reframe', 'node-Upscale', 'image');
  await expect(node(page, 'Upscale')).toContainText('would form a cycle');
  await connect(page, 'node-Reframe', 'node-Upscale', 'scale');
  await expect(node(page, 'Upscale')).toContainText('type mismatch');
  // The input fans out to both branches; the outputs take their nodes.
  await connect(page, 'var-look', 'node-Upscale', 'image');
  await connect(page, 'var-look', 'node-Background_Removal', 'image');
  await connect(page, 'node-Reframe', 'out-hero', 'in');
  await connect(page, 'node-Background_Removal', 'out-cutout', 'in');
  await expect(page.locator('.react-flow__edge')).toHaveCount(5);
  await page.getByRole('button', { name: 'Auto-layout' }).click();
  await page.waitForTimeout(400);
  // Bypass Reframe from the keyboard.
  await node(page, 'Reframe').click();
  await page.keyboard.press('Control+b');
  await expect(node(page, 'Reframe')).toContainText('bypassed');

  // With nothing selected, the panel shows the workflow: what discovery will show, the price.
  await page.locator('.react-flow__pane').click({ position: { x: 5, y: 5 } });
  await expect(page.getByTestId('discovery')).toContainText('look');
  await expect(page.getByTestId('editor-price')).toContainText('from 2 tokens');
  await page.getByTestId('workflow-name').fill('e2e flow');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByText('Saved as “e2e flow”.')).toBeVisible();
  await expect(page).toHaveURL(/\/console\/editor\/e2e%20flow$/);
  await expect(page.getByRole('button', { name: 'Undo' }), 'saving keeps the canvas and its history').toBeEnabled();

  const described = (await api('/api/v3/workflow/e2e%20flow')).body;
  expect(Object.keys(described.inputs.mandatory)).toEqual(['look']);
  expect(described.inputs.linked).toEqual({ 'Reframe.image': 'Upscale.output' });
  expect(described.outputs).toEqual({ hero: 'Reframe.output', cutout: 'Background_Removal.output' });
  expect(described.workflow.nodes.find((n: { name: string }) => n.name === 'Reframe').mode).toBe('bypassed');
  expect(described.workflow.variables).toEqual({ look: { type: 'image', targets: ['Upscale.image', 'Background_Removal.image'] } });
  const estimate = (await api('/api/v3/estimate', { method: 'POST', body: JSON.stringify({ type: 'workflow', target: 'e2e flow', input: { look: 'https://example.com/a.png' } }) })).body;
  expect(estimate.nodes.Reframe).toBe(0);
  expect(await axe(page)).toEqual([]);
  await shot(page, 'editor');

  // The layout is kept: after a reload the nodes stand where the saved layout says.
  const layout = described.workflow.layout as Record<string, [number, number]>;
  await page.reload();
  await expect(node(page, 'Upscale')).toBeVisible();
  for (const [name, testId] of [['Upscale', 'node-Upscale'], ['$var:look', 'var-look'], ['$out:hero', 'out-hero']]) {
    const style = (await wrapperOf(page, testId).getAttribute('style')) ?? '';
    const m = /translate\((-?[\d.]+)px, ?(-?[\d.]+)px\)/.exec(style);
    expect(m, style).toBeTruthy();
    expect([Math.round(Number(m![1])), Math.round(Number(m![2]))]).toEqual(layout[name]);
  }

  // A paste of two nodes and their link is one step to undo.
  const nodes = page.locator('.react-flow__node');
  const edges = page.locator('.react-flow__edge');
  const [n0, e0] = [await nodes.count(), await edges.count()];
  await node(page, 'Upscale').click();
  await node(page, 'Reframe').click({ modifiers: ['Shift'] });
  await page.keyboard.press('Control+c');
  await page.keyboard.press('Control+v');
  await expect(nodes).toHaveCount(n0 + 2);
  await expect(edges).toHaveCount(e0 + 1);
  await expect(node(page, 'Upscale_2')).toBeVisible();
  await page.keyboard.press('Control+z');
  await expect(nodes).toHaveCount(n0);
  await expect(edges).toHaveCount(e0);
  await page.keyboard.press('Control+Shift+z');
  await expect(nodes).toHaveCount(n0 + 2);
  expect(errors).toEqual([]);
  expect(await policyViolations(page)).toEqual([]);
});

test('every problem the service finds is shown on its node at once, and saving waits for them', async ({ page }) => {
  await signIn(page);
  await page.goto(`${base()}/console/editor`);
  await page.getByRole('button', { name: 'Import' }).click();
  const doc = {
    nodes: [
      { name: 'Tryon', tool: 'virtual_tryon', params: { category: 'hats' } },
      { name: 'Up', tool: 'upscale', params: { scale: 3 }, links: { image: 'Tryon.output' } },
    ],
    outputs: { hero: 'Up.output' },
  };
  await page.getByTestId('workflow-json').fill(JSON.stringify(doc));
  await page.getByRole('button', { name: 'Load into the canvas' }).click();
  await expect(node(page, 'Tryon')).toHaveAttribute('data-invalid', 'true');
  await expect(node(page, 'Up')).toHaveAttribute('data-invalid', 'true');
  await expect(node(page, 'Tryon').locator('[data-param="category"]')).toContainText('not one of the allowed values');
  await expect(node(page, 'Up').locator('[data-param="scale"]')).toContainText('not one of the allowed values');
  await page.getByTestId('workflow-name').fill('broken');
  await expect(page.getByRole('button', { name: 'Save' })).toBeDisabled();

  // Fixed in the inspector, the marks go and saving is possible.
  await node(page, 'Up').click();
  await page.locator('.inspector [data-field="scale"] select').selectOption('2');
  await node(page, 'Tryon').click();
  await page.locator('.inspector [data-field="category"] select').selectOption('tops');
  await expect(node(page, 'Up')).not.toHaveAttribute('data-invalid', 'true');
  await expect(node(page, 'Tryon')).not.toHaveAttribute('data-invalid', 'true');
  await expect(page.getByRole('button', { name: 'Save' })).toBeEnabled();

  // Undo brings the last fix back, with its mark.
  await page.locator('.react-flow__pane').click();
  await page.keyboard.press('Control+z');
  await expect(node(page, 'Tryon')).toHaveAttribute('data-invalid', 'true');
});

test('a template opens read-only and is saved as a copy', async ({ page }) => {
  await signIn(page);
  await page.getByRole('link', { name: 'Workflows' }).click();
  await page.getByTestId('templates').getByRole('link', { name: 'Duplicate to my workflows' }).first().click();
  await expect(page.locator('.react-flow__node').first()).toBeVisible();
  const name = await page.getByTestId('workflow-name').inputValue();
  expect(name).toMatch(/ copy$/);
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByText(`Saved as “${name}”.`)).toBeVisible();
  expect((await api(`/api/v3/workflow/${encodeURIComponent(name)}`)).status).toBe(200);

  // And deleted from the list of workflows.
  await page.getByRole('link', { name: 'Workflows' }).click();
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: `Delete ${name}` }).click();
  await expect(page.getByRole('button', { name: `Delete ${name}` })).toHaveCount(0);
  expect((await api(`/api/v3/workflow/${encodeURIComponent(name)}`)).status).toBe(404);
});
