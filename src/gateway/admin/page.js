// capstore's admin page: swaps in the live sections the gateway renders, and sends the
// person's searches and decisions. No library, no build step; served as /admin/page.js under
// a Content-Security-Policy that allows no other script. Everything shown comes from the
// gateway already escaped; this script never builds markup from text.
'use strict';

const sections = ['servers', 'quarantine', 'clients', 'calls'];
const shown = new Map();

function setLive(text, ok) {
  const live = document.getElementById('live');
  live.textContent = text;
  live.className = ok ? '' : 'reason';
}

// Replaces a section's HTML when it changed, keeping open the diffs the person opened.
function swap(id, html) {
  const section = document.getElementById(id);
  if (!section || shown.get(id) === html) return;
  const open = new Set();
  section.querySelectorAll('details[open][data-key]').forEach((d) => open.add(d.dataset.key));
  section.innerHTML = html;
  shown.set(id, html);
  section.querySelectorAll('details[data-key]').forEach((d) => {
    if (open.has(d.dataset.key)) d.open = true;
  });
}

async function poll() {
  try {
    const response = await fetch('/admin/live', { credentials: 'same-origin' });
    if (!response.ok) {
      setLive('the gateway refused: ' + response.status, false);
      return;
    }
    const live = await response.json();
    sections.forEach((id) => swap(id, live[id]));
    setLive('live · updated ' + new Date().toLocaleTimeString(), true);
  } catch (error) {
    setLive('the gateway is unreachable', false);
  }
}

async function post(path, body) {
  return fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

document.addEventListener('DOMContentLoaded', () => {
  sections.forEach((id) => shown.set(id, document.getElementById(id).innerHTML));
  document.getElementById('search').addEventListener('submit', async (event) => {
    event.preventDefault();
    const query = document.getElementById('query').value.trim();
    const results = document.getElementById('results');
    if (!query) return;
    const response = await post('/admin/search', { query });
    results.innerHTML = await response.text();
  });
  document.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-action]');
    if (!button) return;
    button.disabled = true;
    const response = await post('/admin/' + button.dataset.action, {
      tool: button.dataset.tool,
      fingerprint: button.dataset.fingerprint,
    });
    let message = 'the gateway answered ' + response.status;
    try {
      message = (await response.json()).message;
    } catch (error) {
      // not JSON: keep the status
    }
    const decision = document.getElementById('decision');
    decision.textContent = message;
    decision.className = response.ok ? 'ok' : 'reason';
    button.disabled = false;
    poll();
  });
  poll();
  setInterval(poll, 1000);
});
