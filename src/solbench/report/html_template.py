"""The HTML report's template (Jinja2): one self-contained page, styles and script inlined, plots as
inline SVG. Kept as a Python string so that it ships with the package without package data."""

STYLE = """
:root { --fg:#1d232a; --muted:#5f6b76; --line:#d8dee4; --bg:#ffffff; --panel:#f6f8fa; --accent:#0b5cad; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0; }
header { background: #102a43; color: #f0f4f8; padding: 18px 28px; }
header h1 { margin: 0 0 6px; font-size: 22px; }
header dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0; font-size: 13px; }
header dt { color: #9fb3c8; }
header dd { margin: 0; }
nav { position: sticky; top: 0; background: var(--panel); border-bottom: 1px solid var(--line); padding: 6px 28px; z-index: 2; }
nav a { margin-right: 16px; color: var(--accent); text-decoration: none; font-weight: 500; }
main { padding: 8px 28px 40px; max-width: 1400px; }
h2 { border-bottom: 1px solid var(--line); padding-bottom: 4px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
thead th { background: var(--panel); position: sticky; top: 33px; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th::after { content: " ↕"; color: #9aa5b1; font-size: 11px; }
table.sortable th[aria-sort="ascending"]::after { content: " ▲"; color: var(--fg); }
table.sortable th[aria-sort="descending"]::after { content: " ▼"; color: var(--fg); }
tbody tr:hover { background: #f0f6ff; }
.score { font-weight: 600; padding: 1px 6px; border-radius: 4px; display: inline-block; min-width: 44px; text-align: center; }
.band-top { background: #1a9850; color: #fff; } .band-high { background: #91cf60; }
.band-mid { background: #fdae61; } .band-low { background: #d73027; color: #fff; } .band-none { background: #e0e0e0; color: #555; }
.flag { display: inline-block; background: #fff3cd; border: 1px solid #f0c36d; border-radius: 3px; padding: 0 4px; margin: 0 2px; font-size: 12px; }
.status-bad { color: #b00020; font-weight: 600; }
.muted { color: var(--muted); }
details.problem { border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; background: #fff; }
details.problem > summary { cursor: pointer; padding: 8px 12px; background: var(--panel); border-radius: 6px; font-weight: 600; }
details.problem[open] > summary { border-bottom: 1px solid var(--line); border-radius: 6px 6px 0 0; }
details.problem .body { padding: 6px 14px 10px; overflow-x: auto; }
.figure svg { max-width: 100%; height: auto; }
.figures { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
.controls button { margin-right: 8px; }
.legend { margin: 0 0 0 40px; font-size: 12px; } .legend > span { margin-right: 12px; white-space: nowrap; }
"""

SCRIPT = """
(function () {
  function cellValue(row, column, numeric) {
    var cell = row.cells[column];
    var raw = cell.getAttribute("data-sort");
    if (raw === null) raw = cell.textContent.trim();
    if (raw === "") return null;
    return numeric ? parseFloat(raw) : raw.toLowerCase();
  }
  function sortTable(table, header) {
    var column = header.cellIndex;
    var numeric = header.getAttribute("data-type") === "num";
    var current = header.getAttribute("aria-sort");
    var order = current ? (current === "ascending" ? "descending" : "ascending") : (numeric ? "descending" : "ascending");
    var sign = order === "ascending" ? 1 : -1;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (row, index) {
      return { row: row, index: index, value: cellValue(row, column, numeric) };
    });
    rows.sort(function (a, b) {
      if (a.value === null || b.value === null) {
        if (a.value === b.value) return a.index - b.index;
        return a.value === null ? 1 : -1;  /* blanks last, whichever the order */
      }
      if (a.value < b.value) return -sign;
      if (a.value > b.value) return sign;
      return a.index - b.index;
    });
    rows.forEach(function (item) { body.appendChild(item.row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", order);
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header) {
      header.addEventListener("click", function () { sortTable(table, header); });
    });
  });
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (target && target.tagName === "DETAILS") target.open = true;
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
  function setAll(open) { document.querySelectorAll("details.problem").forEach(function (d) { d.open = open; }); }
  var expand = document.getElementById("expand-all"), collapse = document.getElementById("collapse-all");
  if (expand) expand.addEventListener("click", function () { setAll(true); });
  if (collapse) collapse.addEventListener("click", function () { setAll(false); });
})();
"""

TEMPLATE = """<!DOCTYPE html>
{{ marker | safe }}
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="solbench report">
<title>solbench report · {{ summary.hardware or summary.device }} · {{ summary.created }}</title>
<style>{{ style | safe }}</style>
</head>
<body>
<header>
  <h1>solbench run report</h1>
  <dl>{% for label, value in header %}<dt>{{ label }}</dt><dd>{{ value }}</dd>{% endfor %}</dl>
</header>
<nav><a href="#suites">Suite scores</a><a href="#leaderboard-section">Leaderboard</a><a href="#suite-plots">Suite plots</a><a href="#problems">Problems</a>{% if energy_rows %}<a href="#energy">Energy</a>{% endif %}{% if content.profiles %}<a href="#profiles">Profiles</a>{% endif %}<a href="#audit">Audit flags</a><a href="#notes">Notes</a></nav>
<main>
<section id="suites">
<h2>Suite scores</h2>
{% if content.suites %}
<table class="sortable" id="suite-table">
<thead><tr><th data-type="text">solution</th><th data-type="num" class="num">problems</th><th data-type="num" class="num">mean S</th><th data-type="num" class="num">median S</th><th data-type="num" class="num">speedup vs ref</th><th data-type="num" class="num">speedup vs T_b</th>{% for key in fast_keys %}<th data-type="num" class="num">fast_{{ key }}</th>{% endfor %}</tr></thead>
<tbody>
{% for s in content.suites %}<tr><td>{{ s.solution }}</td><td class="num" data-sort="{{ s.problems }}">{{ s.problems }}</td><td class="num" data-sort="{{ sort_key(s.score_mean) }}"><span class="score {{ band_class(s.score_mean) }}">{{ fmt_score(s.score_mean) }}</span></td><td class="num" data-sort="{{ sort_key(s.score_median) }}">{{ fmt_score(s.score_median) }}</td><td class="num" data-sort="{{ sort_key(s.geomean_speedup_vs_reference) }}">{{ fmt_ratio(s.geomean_speedup_vs_reference) }}</td><td class="num" data-sort="{{ sort_key(s.geomean_speedup_vs_baseline) }}">{{ fmt_ratio(s.geomean_speedup_vs_baseline) }}</td>{% for key in fast_keys %}<td class="num" data-sort="{{ sort_key(s.fast_p.get(key)) }}">{{ fmt_share(s.fast_p.get(key)) }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table>
{% for s in content.suites %}{% if s.by_category %}
<details><summary>{{ s.solution }}: mean problem score by category</summary>
{% for category, values in s.by_category.items() %}<p><b>{{ category }}</b>: {% for value, score in values | dictsort %}{{ value }} <span class="score {{ band_class(score) }}">{{ fmt_score(score) }}</span>{% if not loop.last %}, {% endif %}{% endfor %}</p>{% endfor %}
</details>{% endif %}{% endfor %}
{% else %}<p class="muted">No suite scores in the summary.</p>{% endif %}
</section>

<section id="leaderboard-section">
<h2>Leaderboard</h2>
<p class="muted">Click a column header to sort; blanks (no score: T_SOL or T_b unknown) stay last. Score S = 1 / (1 + (T_k − T_SOL) / (T_b − T_SOL)): 0.5 at the baseline, 1 at the speed of light.</p>
<table class="sortable" id="leaderboard">
<thead><tr><th data-type="text">problem</th><th data-type="text">solution</th><th data-type="num" class="num">score</th><th data-type="num" class="num">speedup vs ref</th><th data-type="num" class="num">speedup vs T_b</th><th data-type="num" class="num">T/T_SOL</th><th data-type="num" class="num">passed</th><th data-type="text">flags</th></tr></thead>
<tbody>
{% for p in content.leaderboard %}<tr><td><a href="#{{ content.anchor_of(p.problem) }}">{{ p.problem }}</a></td><td>{{ p.solution }}</td><td class="num" data-sort="{{ sort_key(p.score) }}"><span class="score {{ band_class(p.score) }}">{{ fmt_score(p.score) }}</span></td><td class="num" data-sort="{{ sort_key(p.geomean_speedup_vs_reference) }}">{{ fmt_ratio(p.geomean_speedup_vs_reference) }}</td><td class="num" data-sort="{{ sort_key(p.geomean_speedup_vs_baseline) }}">{{ fmt_ratio(p.geomean_speedup_vs_baseline) }}</td><td class="num" data-sort="{{ sort_key(p.median_ratio_to_sol) }}">{{ fmt_ratio(p.median_ratio_to_sol) }}</td><td class="num" data-sort="{{ sort_key(passed_share(p)) }}">{{ statuses_text(p.statuses) }}</td><td>{% for flag in p.flags %}<span class="flag">{{ flag }}</span>{% endfor %}</td></tr>
{% endfor %}</tbody></table>
</section>

<section id="suite-plots">
<h2>Suite plots</h2>
<div class="figures">
{% for figure in suite_figures %}<div class="figure" data-plot="{{ figure.name }}">{{ figure.svg | safe }}</div>
{% else %}<p class="muted">Nothing to plot: no problem has both a T_SOL and a correct timed solution.</p>{% endfor %}
</div>
</section>

<section id="problems">
<h2>Problems</h2>
<p class="controls"><button id="expand-all" type="button">expand all</button><button id="collapse-all" type="button">collapse all</button></p>
{% for section in content.problems %}
<details class="problem" id="{{ section.anchor }}">
<summary>{{ section.name }} {% if section.best %}<span class="score {{ band_class(section.best.score) }}">{{ fmt_score(section.best.score) }}</span> <span class="muted">best: {{ section.best.solution }}</span>{% endif %}{% if section.verdict %} <span class="flag">{{ section.verdict }}</span>{% endif %}</summary>
<div class="body">
{% if section.categories %}<p class="muted">{% for key, value in section.categories.items() %}{{ key }} <b>{{ value }}</b>{% if not loop.last %} · {% endif %}{% endfor %}</p>{% endif %}
<div class="figures">
{% if section.roofline_svg %}<div class="figure" data-plot="roofline">{{ section.roofline_svg | safe }}
{% if section.roofline_legend %}<p class="legend">{% for entry in section.roofline_legend %}<span><span style="color: {{ entry.colour }}">{{ entry.glyph }}</span> {{ entry.label }}</span>{% endfor %}</p>{% endif %}
</div>{% endif %}
<div>
<table><thead><tr><th>solution</th><th class="num">score</th><th class="num">speedup vs ref</th><th class="num">T/T_SOL</th><th>workloads</th></tr></thead><tbody>
{% for p in section.scores %}<tr><td>{{ p.solution }}</td><td class="num"><span class="score {{ band_class(p.score) }}">{{ fmt_score(p.score) }}</span></td><td class="num">{{ fmt_ratio(p.geomean_speedup_vs_reference) }}</td><td class="num">{{ fmt_ratio(p.median_ratio_to_sol) }}</td><td>{{ statuses_text(p.statuses) }}</td></tr>
{% endfor %}</tbody></table>
{% for note in section.roofline_notes %}<p class="muted">{{ note }}</p>{% endfor %}
</div></div>
<table><thead><tr><th>workload</th><th>solution</th><th>status</th><th class="num">T_k</th><th class="num">T_SOL</th><th class="num">T_b</th><th>T_b from</th><th class="num">T_ref</th><th class="num">S</th><th class="num">speedup vs ref</th><th class="num">FLOPs</th><th class="num">bytes</th><th>flags</th></tr></thead><tbody>
{% for w in section.workloads %}<tr><td title="{{ w.workload }}">{{ w.workload[:12] }}</td><td>{{ w.solution }}</td><td class="{{ '' if w.status == 'PASSED' else 'status-bad' }}">{{ w.status }}</td><td class="num">{{ fmt_time(w.latency_ms) }}</td><td class="num">{{ fmt_time(w.sol_ms) }}</td><td class="num">{{ fmt_time(w.baseline_ms) }}</td><td>{{ w.baseline_candidate or '–' }}</td><td class="num">{{ fmt_time(w.reference_ms) }}</td><td class="num"><span class="score {{ band_class(w.score) }}">{{ fmt_score(w.score) }}</span></td><td class="num">{{ fmt_ratio(w.speedup_vs_reference) }}</td><td class="num">{{ fmt_count(w.flops) }}</td><td class="num">{{ fmt_count(w.bytes) }}</td><td>{% for flag in w.flags %}<span class="flag">{{ flag }}</span>{% endfor %}</td></tr>
{% endfor %}</tbody></table>
</div>
</details>
{% endfor %}
</section>

{% if energy_rows %}
<section id="energy">
<h2>Energy</h2>
<p class="muted">Joules per call measured on the GPU's energy counter (--energy). Energy score S_E = 1 / (1 + (E_k − E_SOL) / (E_b − E_SOL)); the time-vs-energy scatter of each suite is among the suite plots.</p>
<table class="sortable" id="energy-suite-table"><thead><tr><th data-type="text">solution</th><th data-type="num" class="num">problems</th><th data-type="num" class="num">mean S_E</th><th data-type="num" class="num">median S_E</th></tr></thead><tbody>
{% for s in content.suites %}<tr><td>{{ s.solution }}</td><td class="num" data-sort="{{ s.problems }}">{{ s.problems }}</td><td class="num" data-sort="{{ sort_key(s.energy_score_mean) }}"><span class="score {{ band_class(s.energy_score_mean) }}">{{ fmt_score(s.energy_score_mean) }}</span></td><td class="num" data-sort="{{ sort_key(s.energy_score_median) }}">{{ fmt_score(s.energy_score_median) }}</td></tr>
{% endfor %}</tbody></table>
<table class="sortable" id="energy-table"><thead><tr><th data-type="text">problem</th><th data-type="text">workload</th><th data-type="text">solution</th><th data-type="num" class="num">E_k</th><th data-type="num" class="num">E_SOL</th><th data-type="num" class="num">E_b</th><th data-type="num" class="num">S_E</th></tr></thead><tbody>
{% for w in energy_rows %}<tr><td><a href="#{{ content.anchor_of(w.problem) }}">{{ w.problem }}</a></td><td title="{{ w.workload }}">{{ w.workload[:12] }}</td><td>{{ w.solution }}</td><td class="num" data-sort="{{ sort_key(w.energy_j) }}">{{ fmt_joules(w.energy_j) }}</td><td class="num" data-sort="{{ sort_key(w.energy_sol_j) }}">{{ fmt_joules(w.energy_sol_j) }}</td><td class="num" data-sort="{{ sort_key(w.energy_baseline_j) }}">{{ fmt_joules(w.energy_baseline_j) }}</td><td class="num" data-sort="{{ sort_key(w.energy_score) }}"><span class="score {{ band_class(w.energy_score) }}">{{ fmt_score(w.energy_score) }}</span></td></tr>
{% endfor %}</tbody></table>
</section>
{% endif %}

{% if content.profiles %}
<section id="profiles">
<h2>Profiles</h2>
<p class="muted">Where T / T_SOL goes for each profiled solution (solbench run --profile: Nsight Compute joined with the SOL analysis and a CUPTI timeline, on the smallest workload): the factors multiply to T / T_SOL.</p>
<div class="figures">
{% for figure in content.profiles %}<div class="figure" data-plot="gap-decomposition" data-problem="{{ figure.problem }}" data-solution="{{ figure.solution }}">{{ figure.svg | safe }}<p class="muted">{{ figure.caption }} (workload {{ figure.workload[:12] }})</p></div>
{% endfor %}</div>
</section>
{% endif %}

<section id="audit">
<h2>Audit flags</h2>
{% if content.audit %}
<table class="sortable" id="audit-table"><thead><tr><th data-type="text">solution</th><th data-type="text">severity</th><th data-type="text">rule</th><th data-type="text">where</th><th data-type="text">message</th></tr></thead><tbody>
{% for a in content.audit %}<tr><td>{{ a.solution }}</td><td class="{{ 'status-bad' if a.severity == 'reject' else '' }}">{{ a.severity }}</td><td>{{ a.rule }}</td><td>{{ a.file or '' }}{% if a.line %}:{{ a.line }}{% endif %}</td><td>{{ a.message }}</td></tr>
{% endfor %}</tbody></table>{% endif %}
{% if content.flagged %}
<table class="sortable" id="flag-table"><thead><tr><th data-type="text">problem</th><th data-type="text">solution</th><th data-type="text">workload</th><th data-type="text">flag</th></tr></thead><tbody>
{% for f in content.flagged %}<tr><td><a href="#{{ content.anchor_of(f.problem) }}">{{ f.problem }}</a></td><td>{{ f.solution }}</td><td>{{ f.workload[:12] if f.workload else '(all)' }}</td><td><span class="flag">{{ f.flag }}</span></td></tr>
{% endfor %}</tbody></table>{% endif %}
{% if not content.audit and not content.flagged %}<p class="muted">No audit findings and no flagged workloads.</p>{% endif %}
</section>

{% if summary.baseline_failures %}
<section id="baseline-failures">
<h2>Baseline candidates that failed</h2>
<p class="muted">T_b of these workloads comes from the other candidates.</p>
<table class="sortable" id="baseline-failure-table"><thead><tr><th data-type="text">problem</th><th data-type="text">candidate</th><th data-type="text">status</th><th data-type="num">workloads</th><th data-type="text">first line of its error</th></tr></thead><tbody>
{% for f in summary.baseline_failures %}<tr><td><a href="#{{ content.anchor_of(f.problem) }}">{{ f.problem }}</a></td><td>{{ f.candidate }}</td><td class="status-bad">{{ f.status }}</td><td class="num">{{ f.workloads }}</td><td>{{ f.detail }}</td></tr>
{% endfor %}</tbody></table>
</section>
{% endif %}

<section id="notes">
<h2>Notes</h2>
{% if summary.notes %}<ul>{% for note in summary.notes %}<li>{{ note }}</li>{% endfor %}</ul>{% else %}<p class="muted">None.</p>{% endif %}
</section>
</main>
<script>{{ script | safe }}</script>
</body>
</html>
"""
