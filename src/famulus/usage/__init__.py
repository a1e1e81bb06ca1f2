"""Usage and spend: the ledger of every model request, prices, budgets."""
