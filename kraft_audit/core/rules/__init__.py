"""Rules: the catalog (rules/*.yaml) and the functions that judge each rule id."""

from kraft_audit.core.rules.catalog import Catalog, CatalogError, RuleSpec, load_catalog
from kraft_audit.core.rules.registry import Finding

__all__ = ["Catalog", "CatalogError", "Finding", "RuleSpec", "load_catalog"]
