"""One module a strategy; `variable_mgr.registry` maps names to them."""
