"""An admin key in a real browser: it logs in to its own (empty) tenant, picks another one
from the tenant picker, and then sees that tenant's memories, the header naming it; the
picker is labelled, error-free and fits a phone."""

from __future__ import annotations

from tests.browser.harness import Tab
from tests.browser.world import BETA_SECRET, Seeded


def test_an_admin_key_picks_a_tenant_and_sees_its_memories(phone: Tab, served: Seeded) -> None:
    phone.login(served.admin_key)
    assert phone.page.get_attribute("#tenant", "data-tenant") == "ops"
    assert phone.page.locator("li.hit").count() == 0  # its own tenant holds nothing

    phone.page.click("#tenant-switch")
    phone.page.wait_for_url("**/ui/tenants")
    listed = phone.page.locator("tr.tenant-row").evaluate_all(
        "rows => rows.map(r => r.dataset.tenant)")
    assert {"alpha", "beta", "ops"} <= set(listed)
    phone.assert_basics()
    assert phone.overflow_width() <= 375
    phone.shot("tenants-phone")

    phone.page.click("tr.tenant-row[data-tenant='beta'] button.tenant-choose")
    phone.page.wait_for_url("**/ui/memories")
    assert phone.page.get_attribute("#tenant", "data-tenant") == "beta"
    assert "admin key of ops" in phone.page.inner_text("#tenant")
    assert phone.page.locator("li.hit a.hit-link").all_inner_texts() == [BETA_SECRET]
    phone.assert_basics()
    assert phone.overflow_width() <= 375
