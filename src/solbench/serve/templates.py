"""The pages' Jinja2 templates, kept as Python strings (they ship without package data). Autoescape is
on for every template: user names, solution names, sources and logs are text, never markup; the only
markup let through is the roofline SVG that matplotlib wrote from numbers and escaped labels."""

from __future__ import annotations

import datetime
from typing import Any

import jinja2

from solbench.report.content import band_class
from solbench.report.formatting import fmt_count, fmt_ratio, fmt_score, fmt_time, sort_key, statuses_text

EXTRA_STYLE = """
header nav.top { background: none; position: static; padding: 0; border: 0; margin-top: 6px; }
header nav.top a { color: #bcccdc; }
pre.log { background: var(--panel); border: 1px solid var(--line); padding: 8px; white-space: pre-wrap; max-width: 1200px; font-size: 12px; }
table.source td { font-family: ui-monospace, monospace; font-size: 12px; white-space: pre; border: 0; padding: 0 8px; }
table.source td.ln { color: var(--muted); text-align: right; user-select: none; }
tr.finding-reject td { background: #fde2e1; } tr.finding-warn td { background: #fff3cd; }
td.note { font-family: system-ui, sans-serif; color: #8a1c1c; white-space: normal; }
.status-REWARD_HACK, .status-failed { color: #b00020; font-weight: 700; }
form.login input[type=password] { width: 420px; }
"""

BASE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }} · solbench leaderboard</title>
<link rel="stylesheet" href="/static/style.css"></head>
<body><header><h1>{{ title }}</h1>
<nav class="top"><a href="/">boards</a>{% if viewer %}<a href="/me">my submissions ({{ viewer.name }})</a><a href="/logout">log out</a>{% else %}<a href="/login">log in</a>{% endif %}</nav>
</header><main>{% block body %}{% endblock %}</main><script src="/static/sort.js"></script></body></html>"""

INDEX = """{% extends "base" %}{% block body %}
<h2>Leaderboards</h2>
{% if not keys %}<p class="muted">No results yet: the worker measures the baselines first, then evaluates submissions.</p>{% endif %}
<table class="sortable" id="boards"><thead><tr><th data-type="text">dataset</th><th data-type="text">hardware</th><th data-type="text">version key</th><th data-type="num">submissions</th><th data-type="text">board</th></tr></thead><tbody>
{% for k in keys %}<tr><td>{{ k.dataset.name }} <span class="muted">{{ k.dataset.content_hash[:12] }}</span></td><td>{{ k.environment.hardware }}</td>
<td>{{ key_text(k.environment) }}</td><td class="num">{{ k.results }}</td><td><a href="/boards/{{ k.dataset.id }}/{{ k.environment.id }}">{% if k.current %}current{% else %}other version key{% endif %}</a></td></tr>
{% endfor %}</tbody></table>
<h2>Problems served</h2><ul>{% for p in problems %}<li><a href="/problems/{{ p.id }}">{{ p.name }}</a> <span class="muted">{{ p.description[:120] }}</span></li>{% endfor %}</ul>
{% endblock %}"""

BOARD = """{% extends "base" %}{% block body %}
<dl><dt>dataset</dt><dd>{{ b.dataset.name }} (content {{ b.dataset.content_hash[:16] }}, {{ b.problems | length }} problems)</dd>
<dt>version key</dt><dd id="version-key">{{ key_text(b.environment) }}</dd>
<dt>baselines</dt><dd id="baselines-measured">{% if b.baselines_measured %}{{ b.baselined_problems }} of {{ b.problems | length }} problems measured, {{ when(b.baselines_measured[0]) }}{% if b.baselines_measured[1] != b.baselines_measured[0] %} to {{ when(b.baselines_measured[1]) }}{% endif %}{% else %}not measured yet{% endif %}</dd></dl>
{% if others %}<p>Other version keys of this dataset and hardware (ranked apart, never together): {% for o in others %}<a href="/boards/{{ o.dataset.id }}/{{ o.environment.id }}">{{ key_text(o.environment) }}</a>{% if not loop.last %}; {% endif %}{% endfor %}</p>{% endif %}
<p class="muted">Suite score: the mean over all {{ b.problems | length }} problems of each user's best submission (a problem not attempted counts 0). fast_p: correct workloads more than p times faster than the reference. Click a header to sort.</p>
<table class="sortable" id="leaderboard"><thead><tr><th data-type="num">rank</th><th data-type="text">user</th><th data-type="num">suite score</th><th data-type="num">problems</th><th data-type="num">all passed</th>
{% for key in fast_keys %}<th data-type="num">fast_{{ key }}</th>{% endfor %}{% for c in categories %}<th data-type="text">{{ c }}</th>{% endfor %}<th data-type="text">best submissions</th></tr></thead><tbody>
{% for s in b.standings %}<tr><td class="num" data-sort="{{ loop.index }}">{{ loop.index }}</td><td>{{ s.user }}</td><td class="num" data-sort="{{ sort_key(s.score) }}"><span class="score {{ band_class(s.score) }}">{{ fmt_score(s.score) }}</span></td>
<td class="num" data-sort="{{ s.problems }}">{{ s.problems }}</td><td class="num" data-sort="{{ s.solved }}">{{ s.solved }}</td>
{% for key in fast_keys %}<td class="num" data-sort="{{ s.fast_p.get(key, 0) }}">{{ s.fast_p.get(key, 0) }}</td>{% endfor %}
{% for c in categories %}<td>{% for value, score in (s.by_category.get(c) or {}) | dictsort %}{{ value }} {{ fmt_score(score) }}{% if not loop.last %}, {% endif %}{% endfor %}</td>{% endfor %}
<td>{% for e in s.best %}<a href="/problems/{{ e.problem.id }}?env={{ b.environment.id }}">{{ e.problem.name }}</a>: {% if readable(e.submission) %}<a href="/submissions/{{ e.submission.id }}">{{ e.submission.name }}</a>{% else %}{{ e.submission.name }}{% endif %} {{ fmt_score(e.score.score) }}{% if not loop.last %}; {% endif %}{% endfor %}</td></tr>
{% endfor %}</tbody></table>
{% endblock %}"""

PROBLEM = """{% extends "base" %}{% block body %}
<p>{{ v.problem.description }}</p>
<dl><dt>dataset</dt><dd>{{ v.dataset.name }} (content {{ v.dataset.content_hash[:16] }}); problem content {{ v.problem.content_hash[:16] }}</dd>
<dt>categories</dt><dd>{% for c, value in v.categories | dictsort %}{{ c }} {{ value }}{% if not loop.last %}, {% endif %}{% endfor %}</dd>
<dt>version key</dt><dd>{% if v.environment %}{{ key_text(v.environment) }}{% else %}no baselines measured yet{% endif %}</dd></dl>
{% if v.environments | length > 1 %}<p>Other version keys: {% for e in v.environments if e.id != v.environment.id %}<a href="/problems/{{ v.problem.id }}?env={{ e.id }}">{{ key_text(e) }}</a>{% if not loop.last %}; {% endif %}{% endfor %}</p>{% endif %}
<h2>Speed of light and baseline</h2>
<table class="sortable" id="sol-table"><thead><tr><th data-type="text">workload</th><th data-type="num">T_SOL</th><th data-type="num">roofline</th><th data-type="num">floor</th><th data-type="num">unfused</th><th data-type="num">fused</th><th data-type="text">bottleneck</th><th data-type="num">FLOPs</th><th data-type="num">DRAM bytes</th><th data-type="num">T_b</th><th data-type="text">T_b from</th><th data-type="num">reference</th><th data-type="text">measured</th></tr></thead><tbody>
{% for b, sol in v.baselines %}<tr><td>{{ b.workload }}</td><td class="num" data-sort="{{ sort_key(b.sol_ms) }}">{{ fmt_time(b.sol_ms) }}</td><td class="num">{{ fmt_time(sol.get("t_roofline_ms")) }}</td><td class="num">{{ fmt_time(sol.get("t_floor_ms")) }}</td>
<td class="num">{{ fmt_time(sol.get("t_unfused_ms")) }}</td><td class="num">{{ fmt_time(sol.get("t_fused_ms")) }}</td><td>{{ sol.get("bottleneck", sol.get("error", "–")) }}</td><td class="num">{{ fmt_count(b.flops) }}</td><td class="num">{{ fmt_count(b.bytes) }}</td>
<td class="num" data-sort="{{ sort_key(b.baseline_ms) }}">{{ fmt_time(b.baseline_ms) }}</td><td>{{ b.candidate or "–" }}</td><td class="num">{{ fmt_time(b.reference_ms) }}</td><td>{{ when(b.measured) }}</td></tr>
{% endfor %}</tbody></table>
<h2>Roofline</h2>
{% if v.roofline and v.roofline.svg %}<div class="figure" data-plot="roofline">{{ v.roofline.svg | safe }}</div>
<p class="legend">{% for l in v.roofline.legend %}<span style="color: {{ l.colour }}">{{ l.glyph }}</span> {{ l.label }} {% endfor %}</p>{% else %}<p class="muted">No roofline yet{% if v.roofline %}: {{ v.roofline.notes | join("; ") }}{% endif %}.</p>{% endif %}
{% if v.roofline %}{% for note in v.roofline.notes %}<p class="muted">{{ note }}</p>{% endfor %}{% endif %}
<h2>Best submissions</h2>
<table class="sortable" id="best"><thead><tr><th data-type="text">submission</th><th data-type="text">user</th><th data-type="num">score</th><th data-type="num">T_k / T_SOL</th><th data-type="num">speedup vs reference</th><th data-type="text">statuses</th><th data-type="text">flags</th></tr></thead><tbody>
{% for e in v.best %}<tr><td>{% if readable(e.submission) %}<a href="/submissions/{{ e.submission.id }}">#{{ e.submission.id }} {{ e.submission.name }}</a>{% else %}#{{ e.submission.id }} {{ e.submission.name }}{% endif %}</td><td>{{ e.user.name }}</td>
<td class="num" data-sort="{{ sort_key(e.score.score) }}"><span class="score {{ band_class(e.score.score) }}">{{ fmt_score(e.score.score) }}</span></td><td class="num" data-sort="{{ sort_key(e.score.median_ratio_to_sol) }}">{{ fmt_ratio(e.score.median_ratio_to_sol) }}</td>
<td class="num" data-sort="{{ sort_key(e.score.geomean_speedup_vs_reference) }}">{{ fmt_ratio(e.score.geomean_speedup_vs_reference) }}</td><td>{{ statuses_text(e.score.statuses) }}</td><td>{% for f in e.score.flags %}<span class="flag">{{ f }}</span>{% endfor %}</td></tr>
{% endfor %}</tbody></table>
{% endblock %}"""

SUBMISSION = """{% extends "base" %}{% block body %}
<dl><dt>problem</dt><dd><a href="/problems/{{ v.problem.id }}">{{ v.problem.name }}</a></dd><dt>user</dt><dd>{{ v.user.name }}</dd>
<dt>author</dt><dd id="author">{{ v.solution.get("author", "") }}</dd><dt>description</dt><dd id="description">{{ v.solution.get("description", "") }}</dd>
<dt>state</dt><dd id="state" class="status-{{ v.submission.state }}">{{ v.submission.state }}</dd><dt>submitted</dt><dd>{{ when(v.submission.created) }}</dd></dl>
<h2>Workloads</h2>
{% if v.results and v.results[0][0].reused_from %}<p id="reused">The same code (spec and sources) was evaluated for submission #{{ v.results[0][0].reused_from }} under this version key: these are that evaluation's results (code is evaluated once per key).</p>{% endif %}
<table class="sortable" id="workloads"><thead><tr><th data-type="text">workload</th><th data-type="text">kind</th><th data-type="text">status</th><th data-type="num">latency</th><th data-type="num">T_SOL</th><th data-type="num">score</th><th data-type="text">flags</th><th data-type="text">GPU</th><th data-type="text">version key</th></tr></thead><tbody>
{% for r, env in v.results %}<tr><td>{{ r.workload }}</td><td>{% if r.held_out %}held out{% else %}published{% endif %}</td><td class="status-{{ r.status }}">{{ r.status }}</td><td class="num" data-sort="{{ sort_key(r.latency_ms) }}">{{ fmt_time(r.latency_ms) }}</td>
<td class="num">{{ fmt_time(r.sol_ms) }}</td><td class="num" data-sort="{{ sort_key(r.score) }}">{{ fmt_score(r.score) }}</td><td>{% for f in loads(r.flags) %}<span class="flag">{{ f }}</span>{% endfor %}</td><td>{{ r.gpu_uuid or "–" }}</td><td>{{ key_text(env) }}</td></tr>
{% endfor %}</tbody></table>
{% if not v.results %}<p class="muted">No results yet ({{ v.submission.state }}).</p>{% endif %}
<h2>The evaluator's messages</h2>
{% for r, env in v.results %}{% if r.log %}<h3>{{ r.workload }}: {{ r.status }}</h3><pre class="log" id="log-{{ loop.index }}">{{ r.log }}</pre>{% endif %}{% endfor %}
<h2>Source and audit findings</h2>
{% if not v.findings %}<p class="muted">The static analysis found nothing to report.</p>{% endif %}
<ul id="findings">{% for f in v.findings %}<li class="finding-{{ f.severity }}">{{ f.severity }} [{{ f.rule }}] {{ f.file }}:{{ f.line }}: {{ f.message }}</li>{% endfor %}</ul>
{% for path, lines in v.sources %}<h3>{{ path }}</h3><table class="source">{% for line in lines %}<tr{% if line.findings %} class="finding-{{ line.findings[0].severity }}"{% endif %}><td class="ln">{{ line.number }}</td><td>{{ line.text }}</td></tr>
{% for f in line.findings %}<tr class="finding-{{ f.severity }}"><td></td><td class="note">↑ {{ f.severity }} [{{ f.rule }}] {{ f.message }}</td></tr>{% endfor %}{% endfor %}</table>{% endfor %}
{% endblock %}"""

MINE = """{% extends "base" %}{% block body %}
<table class="sortable" id="mine"><thead><tr><th data-type="num">id</th><th data-type="text">name</th><th data-type="text">problem</th><th data-type="text">state</th><th data-type="num">score</th><th data-type="text">submitted</th></tr></thead><tbody>
{% for s, problem, score in rows %}<tr><td class="num" data-sort="{{ s.id }}">{{ s.id }}</td><td><a href="/submissions/{{ s.id }}">{{ s.name }}</a></td><td><a href="/problems/{{ problem.id }}">{{ problem.name }}</a></td><td>{{ s.state }}</td><td class="num" data-sort="{{ sort_key(score) }}">{{ fmt_score(score) }}</td><td>{{ when(s.created) }}</td></tr>
{% endfor %}</tbody></table>{% if not rows %}<p class="muted">No submissions yet: solbench submit SOLUTION.json --server URL</p>{% endif %}
{% endblock %}"""

LOGIN = """{% extends "base" %}{% block body %}
{% if message %}<p class="status-bad">{{ message }}</p>{% endif %}
<form class="login" method="post" action="/login"><label>API token <input type="password" name="token" autocomplete="off"></label> <button type="submit">log in</button></form>
<p class="muted">The token is kept in a cookie of this site only (HttpOnly, SameSite=Strict) and used for reading pages.</p>
{% endblock %}"""

ERROR = """{% extends "base" %}{% block body %}<p class="status-bad" id="error">{{ message }}</p>{% endblock %}"""


def when(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def key_text(environment: Any) -> str:
    if environment is None:
        return "–"
    parts = [environment.hardware, environment.device, f"torch {environment.torch}"]
    parts += [f"{name} {getattr(environment, name)}" for name in ("triton", "cuda", "driver") if getattr(environment, name)]
    return ", ".join(parts + [f"solbench {environment.solbench}", environment.clock_policy, f"key {environment.key_hash[:10]}"])


def environment() -> jinja2.Environment:
    import json

    env = jinja2.Environment(loader=jinja2.DictLoader({"base": BASE, "index": INDEX, "board": BOARD, "problem": PROBLEM, "submission": SUBMISSION,
                                                       "mine": MINE, "login": LOGIN, "error": ERROR}),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.globals.update(fmt_score=fmt_score, fmt_time=fmt_time, fmt_ratio=fmt_ratio, fmt_count=fmt_count, sort_key=sort_key, band_class=band_class,
                       statuses_text=statuses_text, when=when, key_text=key_text, loads=json.loads)
    return env
