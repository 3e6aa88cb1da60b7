package report

import "html/template"

// pageTmpl is the report page. Everything is inline: the styles, the
// plots (SVG built by plot.SVG) and, on the live page only, the script
// that refreshes it.
var pageTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="gocrawl {{.Version}}">
<link rel="icon" href="data:,">
{{if .Live}}<noscript><meta http-equiv="refresh" content="{{.RefreshSeconds}}"></noscript>{{end}}
<title>{{.Title}}</title>
<style>
:root { --ok: #2a9d8f; --refused: #e76f51; --err: #9b2226; --inflight: #264653; --cur: #e9c46a; --limit: #6c757d;
  --delay: #7b2cbf; --level: #d62828; --fg: #1d2329; --muted: #5f6b76; --line: #d9dee3; --bg: #fff; --panel: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); }
header h1 { margin: 0; font-size: 22px; }
header p { margin: 4px 0 0; color: var(--muted); }
main { padding: 8px 28px 28px; max-width: 1500px; }
h2 { font-size: 17px; margin: 26px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 2px; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.note { color: var(--muted); margin: 0 0 6px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 10px; margin-top: 14px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }
.card .v { font-size: 22px; font-weight: 600; }
.card .l { font-weight: 600; }
.card .n { color: var(--muted); font-size: 12px; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 8px 16px; }
svg.plot { width: 100%; height: auto; background: var(--bg); }
svg.plot text { font: 11px system-ui, sans-serif; fill: var(--muted); }
svg.plot .ptitle { font-size: 12.5px; font-weight: 600; fill: var(--fg); }
svg.plot .ptitle .unit { font-weight: 400; fill: var(--muted); }
svg.plot .grid { stroke: var(--line); stroke-width: 1; }
svg.plot .axis, svg.plot .tickmark { stroke: var(--muted); stroke-width: 1; }
svg.plot .line { fill: none; stroke-width: 1.8; stroke-linejoin: round; }
svg.plot .ref { stroke-width: 1.4; stroke-dasharray: 5 4; }
svg.plot .legend text { fill: var(--fg); }
.c-ok { stroke: var(--ok); } .c-refused { stroke: var(--refused); } .c-err { stroke: var(--err); }
.c-inflight { stroke: var(--inflight); } .c-cur { stroke: var(--cur); } .c-limit { stroke: var(--limit); }
.c-delay { stroke: var(--delay); } .c-level { stroke: var(--level); }
table { border-collapse: collapse; margin: 4px 0 8px; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th { background: var(--panel); font-weight: 600; }
td.k, th.k { text-align: left; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
td.bar { width: 180px; }
td.bar span { display: block; height: 9px; background: var(--ok); border-radius: 2px; }
.tables { display: flex; flex-wrap: wrap; gap: 10px 40px; }
details summary { cursor: pointer; color: var(--muted); margin: 10px 0; }
footer { color: var(--muted); padding: 0 28px 24px; font-size: 12px; }
</style>
</head>
<body data-live="{{.Live}}">
<header>
<h1>{{.Title}}</h1>
<p>{{.Subtitle}}{{if .Live}} · live, refreshed every {{.RefreshSeconds}} s{{end}}</p>
</header>
<main id="report">
<section class="cards" aria-label="summary">
{{range .Cards}}<div class="card"><div class="l">{{.Label}}</div><div class="v">{{.Value}}</div>{{if .Note}}<div class="n">{{.Note}}</div>{{end}}</div>
{{end}}</section>

{{if .Job}}<h2>Job directory</h2>
<p class="note">{{.Job.Dir}}: spider {{.Job.Spider}}, created {{.Job.Created}}. {{.Job.Queued}} requests queued ({{.Job.Delayed}} delayed by throttling_delay); running the same command again resumes the crawl.</p>
<div class="tables">
{{if .Job.Queue}}<table><caption class="note">Queued requests by scope</caption><tr><th class="k">scopes</th><th>queued</th><th></th></tr>
{{range .Job.Queue}}<tr><td class="k">{{.Key}}</td><td>{{.Value}}</td><td class="bar"><span style="width:{{.Share}}%"></span></td></tr>
{{end}}{{if .Job.MoreQueue}}<tr><td class="k">… {{.Job.MoreQueue}} more</td><td></td><td></td></tr>{{end}}</table>{{end}}
<table><caption class="note">Scopes in backoff</caption><tr><th class="k">scope</th><th class="k">state</th></tr>
{{range .Job.Backoff}}<tr><td class="k">{{.Key}}</td><td class="k">{{.Value}}</td></tr>
{{else}}<tr><td class="k" colspan="2">none</td></tr>{{end}}</table>
{{if .Job.Feeds}}<table><caption class="note">Feeds</caption><tr><th class="k">file</th><th class="k">resume</th></tr>
{{range .Job.Feeds}}<tr><td class="k">{{.Key}}</td><td class="k">{{.Value}}</td></tr>{{end}}</table>{{end}}
</div>{{end}}

<h2>Over time</h2>
{{if .NoSeries}}<p class="note">{{.NoSeries}}</p>{{else}}
<p class="note">"Refused" are responses with a backoff status (429, 503, ...: the server asking to slow down); "errors" are timeouts and network errors. Dashed lines are the configured limits; the yellow staircase is the concurrency limit in force (backoff lowers it).</p>
<div class="plots">{{range .Global}}{{.}}{{end}}</div>
{{range .ScopePlots}}<h3>{{.Scope}}</h3>{{if .Note}}<p class="note">{{.Note}}</p>{{end}}
<div class="plots">{{range .Plots}}{{.}}{{end}}</div>
{{end}}{{end}}

<h2>Responses and errors</h2>
<div class="tables">
<table><caption class="note">Responses by status</caption><tr><th class="k">status</th><th>count</th><th></th></tr>
{{range .Statuses}}<tr><td class="k">{{.Key}}</td><td>{{.Value}}</td><td class="bar"><span style="width:{{.Share}}%"></span></td></tr>
{{else}}<tr><td class="k" colspan="3">no responses</td></tr>{{end}}</table>
<table><caption class="note">Download errors by kind</caption><tr><th class="k">kind</th><th>count</th><th></th></tr>
{{range .Errors}}<tr><td class="k">{{.Key}}</td><td>{{.Value}}</td><td class="bar"><span style="width:{{.Share}}%"></span></td></tr>
{{else}}<tr><td class="k" colspan="3">none</td></tr>{{end}}</table>
<table><caption class="note">Dropped requests</caption><tr><th class="k">reason</th><th>count</th><th></th></tr>
{{range .Dropped}}<tr><td class="k">{{.Key}}</td><td>{{.Value}}</td><td class="bar"><span style="width:{{.Share}}%"></span></td></tr>
{{else}}<tr><td class="k" colspan="3">none</td></tr>{{end}}</table>
{{if .Changes}}<table><caption class="note">Pages by change since their last visit (recrawl)</caption><tr><th class="k">change</th><th>count</th><th></th></tr>
{{range .Changes}}<tr><td class="k">{{.Key}}</td><td>{{.Value}}</td><td class="bar"><span style="width:{{.Share}}%"></span></td></tr>
{{end}}</table>{{end}}
</div>

{{if .Slowest}}<h2>Slowest scopes</h2>
<p class="note">The scopes with the fewest ok responses per second, and what held them back.</p>
<table class="scopes"><tr><th class="k">scope</th><th>requests</th><th>ok</th><th>429</th><th>4xx/5xx</th><th>errors</th><th>ok/s</th><th>backing off</th><th>delay</th><th>configured</th><th>level</th><th>concurrency</th></tr>
{{range .Slowest}}<tr><td class="k">{{.Scope}}</td><td>{{.Requests}}</td><td>{{.OK}}</td><td>{{.R429}}</td><td>{{.Other}}</td><td>{{.Errors}}</td><td>{{.OKPerSec}}</td><td>{{.Backoff}}</td><td>{{.Delay}}</td><td>{{.ConfDelay}}</td><td>{{.Level}}</td><td>{{.Concurrency}}</td></tr>
{{end}}</table>{{end}}

{{if .Scopes}}<h2>Scopes</h2>
<p class="note">Most requested first.{{if .MoreScopes}} {{.MoreScopes}} more are in the per-scope CSV of the stats dump.{{end}}</p>
<table class="scopes"><tr><th class="k">scope</th><th>requests</th><th>ok</th><th>429</th><th>4xx/5xx</th><th>errors</th><th>peak</th><th>ok/s</th><th>backing off</th><th>delay</th><th>configured</th><th>level</th><th>concurrency</th></tr>
{{range .Scopes}}<tr><td class="k">{{.Scope}}</td><td>{{.Requests}}</td><td>{{.OK}}</td><td>{{.R429}}</td><td>{{.Other}}</td><td>{{.Errors}}</td><td>{{.Peak}}</td><td>{{.OKPerSec}}</td><td>{{.Backoff}}</td><td>{{.Delay}}</td><td>{{.ConfDelay}}</td><td>{{.Level}}</td><td>{{.Concurrency}}</td></tr>
{{end}}</table>{{end}}

{{if .Stats}}<details><summary>All {{len .Stats}} stats</summary>
<table><tr><th class="k">key</th><th>value</th></tr>
{{range .Stats}}<tr><td class="k">{{.Key}}</td><td>{{.Value}}</td></tr>
{{end}}</table></details>{{end}}
</main>
<footer>Generated by gocrawl {{.Version}} on {{.Generated}} from {{.Source}}.</footer>
{{if .Live}}<script>
// Refresh the live report in place, keeping
// the scroll position; stop quietly when the crawl (and its server) ends.
(function () {
  var every = {{.RefreshSeconds}} * 1000;
  function refresh() {
    fetch(location.href, {cache: "no-store"}).then(function (r) {
      if (!r.ok) { throw new Error(r.status); }
      return r.text();
    }).then(function (text) {
      var doc = new DOMParser().parseFromString(text, "text/html");
      var fresh = doc.getElementById("report");
      if (fresh) {
        document.getElementById("report").replaceWith(fresh);
        document.querySelector("header").replaceWith(doc.querySelector("header"));
        document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
      }
      setTimeout(refresh, every);
    }).catch(function () {
      document.body.dataset.stopped = "true";
    });
  }
  setTimeout(refresh, every);
})();
</script>{{end}}
</body>
</html>
`))
