// Shared by the browser tests (browser_*_test.cjs): the pass/fail tally every test prints, the
// console errors that count (all but the browser's own favicon request: the UI has none, and a new
// page asks), and Debian's headless Chromium started the one way the tests need (a fresh profile
// in $USER_DATA_DIR, the binary in $CHROMIUM).
const path = require('path');
const { chromium } = require(path.join(process.env.PW_NODE_MODULES, 'playwright-core'));

const failures = [];
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
}

function consoleError(m) {
  return m.type() === 'error' && !/\/favicon\.ico$/.test(m.location().url || '');
}

function launchChromium() {
  return chromium.launchPersistentContext(process.env.USER_DATA_DIR, {
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1400, height: 1000 },
  });
}

module.exports = { failures, check, consoleError, launchChromium };
