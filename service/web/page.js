// The page's script: submit the forms as JSON to the API, cancel jobs,
// delete schedules, and refresh the jobs table and the log tail every two
// seconds. The page works from the server's HTML; this only adds actions
// and freshness.
"use strict";

const errorBox = document.getElementById("error");

// pairs turns "NAME=VALUE" lines into an object.
function pairs(text) {
  const out = {};
  for (const line of text.split("\n")) {
    const t = line.trim();
    if (!t) continue;
    const i = t.indexOf("=");
    if (i <= 0) throw new Error("expected NAME=VALUE, got " + JSON.stringify(t));
    out[t.slice(0, i).trim()] = t.slice(i + 1);
  }
  return out;
}

async function call(method, url, body) {
  const opts = { method: method, headers: {} };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(url, opts);
  const text = await resp.text();
  let data = {};
  try { data = text ? JSON.parse(text) : {}; } catch (e) { data = {}; }
  if (!resp.ok) throw new Error(data.error || resp.status + " " + resp.statusText);
  return data;
}

function show(err) { errorBox.textContent = err ? String(err.message || err) : ""; }

for (const form of document.querySelectorAll("form[data-api]")) {
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const body = {
        spider: form.elements.spider.value,
        args: pairs(form.elements.args.value),
        settings: pairs(form.elements.settings.value),
      };
      if (form.elements.cron) {
        body.cron = form.elements.cron.value.trim();
        body.overlap = form.elements.overlap.checked;
      }
      const res = await call("POST", form.dataset.api, body);
      show(null);
      if (form.id === "start") {
        location.href = "/?job=" + encodeURIComponent(res.id) + "#job";
      } else {
        form.reset();
        await refreshPart("schedules");
      }
    } catch (e) { show(e); }
  });
}

document.addEventListener("click", async (ev) => {
  const t = ev.target;
  try {
    if (t.dataset.cancel) {
      await call("POST", "/api/jobs/" + encodeURIComponent(t.dataset.cancel) + "/cancel");
      await refreshPart("jobs");
    } else if (t.dataset.deleteSchedule) {
      await call("DELETE", "/api/schedules/" + encodeURIComponent(t.dataset.deleteSchedule));
      await refreshPart("schedules");
    }
  } catch (e) { show(e); }
});

// refreshPart replaces the jobs or schedules table with the server's.
async function refreshPart(part) {
  const resp = await fetch("/?part=" + part);
  if (resp.ok) document.getElementById(part).innerHTML = await resp.text();
}

const jobHead = document.getElementById("job");
async function refreshLog() {
  if (!jobHead) return;
  const resp = await fetch("/api/jobs/" + encodeURIComponent(jobHead.dataset.job) + "/log?tail=40");
  if (!resp.ok) return;
  const lines = (await resp.text()).split("\n").filter(Boolean).map((l) => {
    try {
      const r = JSON.parse(l);
      return (r.time || "") + " " + (r.level || "") + " " + (r.message || "");
    } catch (e) { return l; }
  });
  const pre = document.getElementById("log");
  pre.textContent = lines.join("\n");
  pre.scrollTop = pre.scrollHeight;
}

async function tick() {
  try {
    await refreshPart("jobs");
    await refreshLog();
  } catch (e) { /* the service may be restarting: try again later */ }
}
refreshLog();
setInterval(tick, 2000);
