"""The activities every gallery workflow calls: small, instant and deterministic.

Each activity echoes its argument with its own name in front, so a history shows at a glance which
step produced which result. Names read like an order-fulfilment flow because that is the shape of
code people change in real deploys.
"""

from __future__ import annotations

from temporalio import activity

__all__ = [
    "ACTIVITIES", "audit", "charge", "charge_card", "notify", "reserve", "reserve_stock", "ship",
]


@activity.defn
async def reserve(item: str) -> str:
    """Reserve stock for ``item``."""
    return f"reserved:{item}"


@activity.defn
async def charge(item: str) -> str:
    """Charge the customer for ``item``."""
    return f"charged:{item}"


@activity.defn
async def charge_card(item: str) -> str:
    """Charge the customer's card for ``item`` (the renamed ``charge``)."""
    return f"card-charged:{item}"


@activity.defn
async def reserve_stock(item: str) -> str:
    """Reserve stock for ``item`` (the renamed ``reserve``)."""
    return f"stock-reserved:{item}"


@activity.defn
async def ship(item: str) -> str:
    """Ship ``item``."""
    return f"shipped:{item}"


@activity.defn
async def notify(item: str) -> str:
    """Tell the customer about ``item``."""
    return f"notified:{item}"


@activity.defn
async def audit(item: str) -> str:
    """Write an audit record about ``item``."""
    return f"audited:{item}"


#: Registered on every gallery worker, whichever version it runs.
ACTIVITIES = [reserve, reserve_stock, charge, charge_card, ship, notify, audit]
