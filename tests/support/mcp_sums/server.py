"""A small MCP server for the tests: `add(a, b)` and a unit-price lookup, over stdio, or over
streamable HTTP on loopback with `--http PORT`. Run with `--bad-name` it also lists a tool
whose name a harness cannot call; with `--crash` it exits before answering."""

from __future__ import annotations

import sys

from mcp.server.fastmcp import FastMCP

PRICES = {"apple": 0.5, "pear": 0.75}

PORT = int(sys.argv[sys.argv.index("--http") + 1]) if "--http" in sys.argv else 0
server = FastMCP("sums", host="127.0.0.1", port=PORT or 8000)


@server.tool()
def add(a: int, b: int) -> int:
    """The sum of two integers."""
    return a + b


@server.tool()
def unit_price(item: str) -> dict:
    """The price of one item, in euros, and its currency."""
    if item not in PRICES:
        raise ValueError(f"no price for {item!r}")
    return {"price": PRICES[item], "currency": "EUR"}


if "--bad-name" in sys.argv:
    server.add_tool(lambda: "x", name="get-time", description="A name with a dash.")

if __name__ == "__main__":
    if "--crash" in sys.argv:
        print("refusing to start: --crash", file=sys.stderr)
        sys.exit(3)
    server.run("streamable-http" if PORT else "stdio")
