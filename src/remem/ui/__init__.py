"""The web inspector: remem's memories, their history and search explanations as HTML pages
at ``/ui`` of ``remem serve`` (and of ``remem ui --db memory.db``, one local user).

Server-rendered Jinja2 templates (autoescaped), one static style sheet and one small
script; every page reads without JavaScript. A session cookie (HttpOnly, SameSite=Strict,
Secure over https, HMAC-signed) names the tenant of the API key pasted at login; every POST
form carries a CSRF token tied to the session. Pages use the tenant's ``Memory`` and thread
view only, one bounded page at a time.

Pages (under the mount point, ``/ui``):

==================================  ======================================================
``/login``, ``/logout`` (POST)      paste an API key; end the session
``/namespaces``                     users and agents as a tree with counts (paged)
``/memories``                       list and search (``q``, ``mode``, ``kind``, ``as_of``,
                                    ``include_invalid``, ``recency_days``, ``ns``, paged)
``/memories/{id}``                  current value, history with diffs, ``as_of``
``/memories/{id}/undo/{event}``     GET: confirmation; POST: the undo
``/threads``, ``/threads/{id}``     threads; messages, checkpoint tree, summary
``/jobs``, ``/jobs/{id}``           background jobs: depth, failures; a job; POST ``retry``
``/blocks``, ``/blocks/{id}``       core memory blocks, how full; a block's history
``/files?tree=&path=``              a file tree's directory, or a file and its history
``/prompts``, ``/prompts/{name}``   versioned prompts; a prompt's versions with diffs
``/graph?user=&entity=&q=``         a scope's graph: fact search, an entity as SVG
``/approvals``, ``/approvals/{id}`` parked file operations; POST ``approve`` / ``reject``
``/dashboard``                      usage over time (LLM calls, tokens and memory
                                    changes per day), latency percentiles, jobs, threads
``/tenants``, ``/tenant`` (POST)    admin keys only: pick the tenant to view
==================================  ======================================================

Stable hooks for browser tests (ids are unique on their page; classes repeat):

* login: ``#login-key`` (the key field), ``#login-submit``, ``#login-problem`` (after a
  refused key), ``#logout`` (button in the header), ``#tenant`` (who is logged in);
* navigation: ``#nav-memories``, ``#nav-namespaces``, ``#nav-threads``, ``#nav-jobs``,
  ``#nav-blocks``, ``#nav-files``, ``#nav-approvals``, ``#nav-prompts``, ``#nav-graph``,
  ``#nav-dashboard``; ``#tenant[data-tenant]`` (the tenant viewed) and, for admin keys,
  ``#tenant-switch``; pagers
  ``#page-prev`` / ``#page-next``;
* memory list: ``#search-form``, ``#search-q``, ``#search-mode``, ``#search-kind``,
  ``#search-as-of``, ``#search-recency``, ``#search-invalid``, ``#search-submit``;
  results ``#hits`` of ``li.hit[data-id][data-status]`` rows, each with ``a.hit-link``;
  score bars ``.score-bar[data-signal=keyword|vector|recency|relevance][data-width=0..100]``
  (present for searches with a query, one per signal that scored the page, each on a fixed
  0-1 scale: see :func:`remem.ui.views.hit_bars`); ``#empty`` when nothing is found;
* namespaces: ``#namespace-tree`` of ``li.ns`` rows with ``a.ns-link`` and
  ``.count[data-count]``;
* memory page: ``#memory-id``, ``#memory-text``, ``#memory-status``, ``#memory-version``;
  history ``#history .version[data-event][data-op]`` (newest first) with ``a.undo-link``
  (writing keys only); ``#as-of-form``, ``#as-of-input``, ``#as-of-submit``,
  ``#as-of-slider`` (added by the script), ``#as-of-result[data-status]``, ``#as-of-text``;
* undo: ``#undo-form``, ``#undo-confirm``, ``#undo-cancel``, ``#undo-before``,
  ``#undo-after``;
* threads: ``#threads`` table of ``tr.thread-row`` with ``a.thread-link``; thread page
  ``#thread-id``, ``#thread-summary``, ``li.message[data-role]`` with ``.message-text``,
  ``#checkpoint-tree`` of ``li.checkpoint[data-id][data-parent][data-depth]`` (``.head``,
  ``.fork`` for a checkpoint whose parent is another thread's);
* jobs: ``#jobs-depth[data-count]``, ``#jobs-failures[data-count]``, ``#jobs-lag``,
  ``#jobs-status``, ``#jobs-kind``, ``#jobs-submit``, ``#jobs`` table of
  ``tr.job-row[data-status]`` with ``a.job-link``; job page ``#job-id``, ``#job-status``,
  ``#job-error``, ``#job-payload``, ``#retry-form`` / ``#retry-submit`` (failed, dead or
  cancelled jobs, writing keys only);
* blocks: ``#block-list`` of ``li.block-row[data-id]`` with ``a.block-link`` and
  ``.fill-bar[data-width]``; block page ``#block-id``, ``#block-label``, ``#block-value``,
  ``#block-history .version[data-op]``;
* files: ``#files-form``, ``#files-tree``, ``#files-path``, ``#files-submit``, ``#files-up``;
  ``#file-list`` of ``li.file-entry[data-dir]`` with ``a.file-link``; a file's
  ``#file-path``, ``#file-content``, ``#file-history .version[data-op]``;
* prompts: ``#prompts`` table of ``tr.prompt-row[data-name]`` with ``a.prompt-link``;
  prompt page ``#prompt-name``, ``#prompt-text``,
  ``#prompt-history .version[data-version][data-kind]``;
* graph: ``#graph-form``, ``#graph-user``, ``#graph-agent``, ``#graph-q``, ``#graph-entity``,
  ``#graph-as-of``, ``#graph-submit``; ``#fact-hits`` of ``tr.fact-row[data-holds]`` with
  ``a.entity-link``; ``#entity-name``, ``#graph-svg`` with ``g.edge[data-fact][data-holds]``
  (``.ended`` dashed) and ``a.node[data-entity]``, ``#entity-current``, ``#entity-timeline``;
* approvals: ``#approvals-tree``, ``#approvals-status``, ``#approvals-submit``;
  ``#approvals`` table of ``tr.approval-row[data-status]`` with ``a.approval-link``; an
  approval's ``#approval-id``, ``#approval-operation``, ``#approval-path``,
  ``#approval-status``, ``#approval-arguments``, ``#approve-form`` / ``#approve-submit``,
  ``#reject-form`` / ``#reject-reason`` / ``#reject-submit`` (while pending);
* dashboard: ``#dash-threads[data-count]``, ``#dash-jobs-depth[data-count]``,
  ``#dash-jobs-failures[data-count]``, ``#latency`` table of
  ``tr.latency-row[data-route][data-method]`` with an ``svg.latency-plot``; usage
  ``#days-form`` / ``#days``, ``#usage-calls[data-count]``,
  ``#usage-memory-events[data-count]``, ``#usage-input``, ``#usage-output``,
  ``#usage-operations``, plots with ``rect.bar`` and a ``tr[data-day]`` table each;
* tenants (admin keys): ``#tenants`` of ``tr.tenant-row[data-tenant]`` with
  ``button.tenant-choose``; ``#tenant-form``, ``#tenant-name``, ``#tenant-submit``,
  ``#tenants-current``;
* errors: ``#error-message`` (the page's status is the HTTP status).
"""

from __future__ import annotations

from remem.ui.app import UI_PATH, build_ui

__all__ = ["UI_PATH", "build_ui"]
