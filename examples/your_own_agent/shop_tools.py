"""The user's own tool: a price lookup in a shop's catalogue. It stands for anything that must
run where the user's data and credentials are (a database, an internal API): it runs in the
adapter's process, never in the sandbox, and a harness reaches it through the bridge."""

from __future__ import annotations

from langchain_core.tools import tool

CATALOGUE = {
    "north": {"apple": 0.40, "pear": 0.55, "lemon": 0.30, "melon": 2.50, "bread": 1.80},
    "south": {"apple": 0.35, "pear": 0.60, "lemon": 0.45, "melon": 2.20, "bread": 2.10},
}


@tool
def unit_price(item: str, shop: str) -> dict:
    """Price in euros of one unit of `item` (singular, e.g. "apple") in `shop` ("north" or
    "south"). Returns {"item", "shop", "euros"}, or {"error"} for an unknown item or shop."""
    prices = CATALOGUE.get(shop.strip().lower())
    if prices is None:
        return {"error": f"unknown shop {shop!r}; shops: {', '.join(CATALOGUE)}"}
    key = item.strip().lower().removesuffix("s")
    if key not in prices:
        return {"error": f"unknown item {item!r}; items: {', '.join(prices)}"}
    return {"item": key, "shop": shop, "euros": prices[key]}


unit_price.metadata = {"deterministic": True}  # same arguments, same answer: cache its results
