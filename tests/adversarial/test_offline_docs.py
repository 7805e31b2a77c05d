"""/docs and /redoc load Swagger UI and ReDoc from the server itself: no page refers to a
CDN or any other host, and every asset they name is served."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from remem.server import ServerConfig, create_app


def test_docs_pages_use_only_local_assets() -> None:
    app = create_app(ServerConfig(db=":memory:", mcp=False))
    with TestClient(app) as http:
        for page, marker in (("/docs", "SwaggerUIBundle"), ("/redoc", "<redoc")):
            r = http.get(page)
            assert r.status_code == 200 and marker in r.text, page
            # was: cdn.jsdelivr.net (scripts, styles) and fastapi.tiangolo.com (favicon)
            assert not re.search(r"https?://", r.text), r.text
            assets = re.findall(r"""(?:src|href)=["'](/[^"']+)["']""", r.text)
            assert assets, page
            for asset in assets:
                got = http.get(asset)
                assert got.status_code == 200 and len(got.content) > 100, asset
    app.state.remem.close()
