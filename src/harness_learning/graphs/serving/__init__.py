"""Serving a harness outside the adapter: `embed.load_harness` and `embed.serve` (one way to
open a harness, `harness_source.open_harness`), the mirror graph whose nodes stand for the
sandboxed harness's (`mirror`, `served`), the callbacks each tool call reaches
(`harness_callbacks`), reviewed code in process (`inprocess`), LangChain tools (`tools`) and
LangGraph Studio's entry points (`studio`)."""
