"""Elasticsearch: the client, bulk writes, retries, indexes, scans and leases.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.elastic import client as client
    from fusion.elastic import indexes as indexes
    from fusion.elastic import scan as scan
    from fusion.elastic.bulk import ACCESS_DENIED as ACCESS_DENIED
    from fusion.elastic.bulk import Confirmed as Confirmed
    from fusion.elastic.bulk import Target as Target
    from fusion.elastic.bulk import write_documents as write_documents
    from fusion.elastic.errors import IndexAccessError as IndexAccessError
    from fusion.elastic.errors import IndexGoneError as IndexGoneError
    from fusion.elastic.lease import Lease as Lease
    from fusion.elastic.retry import RetryPolicy as RetryPolicy
    from fusion.elastic.retry import call_with_retries as call_with_retries
    from fusion.elastic.retry import index_gone as index_gone
    from fusion.elastic.retry import mget_docs as mget_docs

__getattr__, __dir__, __all__ = attach(__name__, __file__)
