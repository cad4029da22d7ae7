// The admin page in a real browser: Debian's Chromium driven by playwright-core (both installed
// by scripts/chromium.sh), for tests/gateway_page.rs.
//
//   node page.js PAGE_URL SCREENSHOT.png
//
// PAGE_URL is the address `capstore serve --http` printed, with its token. The gateway fronts
// `mut` (a server that has rewritten `echo` with a hostile description: it is held), `time`
// (mcp-server-time) and `gone` (a server that exits at start). Prints one line per check and a
// last line `page: N passed, M failed`; exits 1 if any check failed.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const { chromium } = require(path.join(root, '.test-deps/browser/node_modules/playwright-core'));

const [url, screenshot] = process.argv.slice(2);
const results = { passed: 0, failed: 0 };
function check(name, condition, detail) {
  results[condition ? 'passed' : 'failed'] += 1;
  console.log((condition ? 'ok    ' : 'FAIL  ') + name + (condition ? '' : ': ' + detail));
}

async function main() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'capstore-page-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 860 },
  });
  context.setDefaultTimeout(15000);
  const violations = [];
  try {
    const page = context.pages()[0] || (await context.newPage());
    page.on('console', (message) => {
      if (/Content.Security.Policy|Refused to/i.test(message.text())) violations.push(message.text());
    });
    await page.goto(url);
    check('the token is taken out of the address bar', !page.url().includes('token'), page.url());

    // Servers: up, up, and down with its reason.
    const state = (server) => page.locator(`#servers tr[data-server="${server}"] .state`).innerText();
    await page.locator('#servers tr[data-server="gone"] .state.down').waitFor();
    check('mut is up', (await state('mut')) === 'up', await state('mut'));
    check('time is up', (await state('time')) === 'up', await state('time'));
    const gone = await page.locator('#servers tr[data-server="gone"]').innerText();
    check('gone is down, with its reason', gone.includes('down') && gone.includes('cannot open database'), gone);
    const mutRow = await page.locator('#servers tr[data-server="mut"]').innerText();
    check('mut shows its tool count', /\t9\t/.test(mutRow), JSON.stringify(mutRow));

    // Search: what search_tools answers, with capstore's reasons.
    await page.fill('#query', 'get the current time');
    await page.click('#search button');
    await page.locator('#results ol.results li').first().waitFor();
    const first = await page.locator('#results ol.results li').first().innerText();
    check('search finds time/get_current_time first, with why', first.startsWith('time/get_current_time')
      && first.includes('why: BM25 '), first);

    // Recent calls, from the gateway's event bus.
    await page.locator('#calls tr', { hasText: 'mut/mutate' }).first().waitFor();
    const mutate = await page.locator('#calls tr', { hasText: 'mut/mutate' }).first().innerText();
    check('the rug-pull call is listed, ok, with its duration', /mut\/mutate\s+mut\s+ok\s+\d+ ms/.test(mutate), mutate);

    // Quarantine: the held echo, its diff side by side.
    const held = page.locator('#quarantine details[data-key="mut/echo"]');
    await held.locator('summary').click();
    const oldSide = await held.locator('.diff .old pre').first().innerText();
    const newSide = await held.locator('.diff .new pre').first().innerText();
    check('the approved description is on the left', oldSide.includes('Echo a message back'), oldSide);
    check('the new description is on the right, as text', newSide.includes('<img src=x onerror='), newSide);
    const added = await held.locator('.diff .new ins').allInnerTexts();
    check('what was added is marked', added.join('').includes('<script>'), JSON.stringify(added));
    const schema = await held.locator('.diff .new pre').nth(1).innerText();
    check('the schema diff shows the new parameter', schema.includes('"secret"'), schema);
    const markup = await page.evaluate(() => ({
      pwned: window.pwned === undefined ? null : window.pwned,
      images: document.querySelectorAll('#quarantine img, #quarantine script').length,
    }));
    check('no server text became markup', markup.pwned === null && markup.images === 0, JSON.stringify(markup));

    // Keep held, then look again: it says so and stays open across the live updates.
    await held.locator('button[data-action="hold"]').click();
    await page.locator('#decision', { hasText: 'stays held' }).waitFor();
    await held.locator('.kept').waitFor();
    await page.waitForTimeout(1500); // a poll or two
    check('the diff stays open across live updates', await held.evaluate((d) => d.open), 'closed');
    await page.screenshot({ path: screenshot });

    // Approve: written to the trust file; nothing is held any more.
    await held.locator('button[data-action="approve"]').click();
    await page.locator('#decision', { hasText: 'approved `mut/echo`' }).waitFor();
    await page.locator('#nothing-held').waitFor();
    check('approved, nothing is held', true, '');
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  check('no Content-Security-Policy violation', violations.length === 0, violations.join(' | '));
}

main()
  .catch((error) => check('the page drives to the end', false, error.stack || error))
  .finally(() => {
    console.log(`page: ${results.passed} passed, ${results.failed} failed`);
    process.exit(results.failed ? 1 : 0);
  });
