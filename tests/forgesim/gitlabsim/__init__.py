"""A GitLab REST v4 simulator for patchbridge's tests.

Layout (each module names what it owns):
  clock.py        the simulated clock and GitLab's timestamp formats
  gitrepo.py      bare repositories: the only module that runs git
  diff.py         GitLab's diff-line model: line numbers, line codes, positions
  model.py        plain records (users, projects, MRs, versions, notes, ...)
  errors.py       GitLab's and Grape's error bodies
  params.py       Rack-style parameter parsing and Grape-like coercion
  forge.py        the domain rules (what GitLab does); no HTTP in here
  quickactions.py the /command extractor for note bodies
  entities.py     JSON shapes of the REST entities
  pagination.py   offset pagination with GitLab's headers
  api.py          the /api/v4 routes
  webhooks.py     hook payloads and the asynchronous delivery thread
  faults.py       fault injection and rate limiting
  control.py      the /_sim/ control API used by tests
  githttp.py      git smart HTTP through git-http-backend (CGI)
  seed.py         loading a seed document (default: seed-default.json)
  server.py       the HTTP server, request dispatch, listener pause/resume
"""

GITLAB_VERSION = "17.9.0-ee"
GITLAB_REVISION = "f0r6e5im"
