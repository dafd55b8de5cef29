"""Weaviate vector backend (``weaviate-client`` v4), one tenant per user.

For deployments that outgrow one machine. SQL stays the system of record; this
is a derived index like the local one and follows the same contract (the suite
in ``tests/test_vector_contract.py`` runs against it when
``MEMSTRATA_WEAVIATE_URL`` points at a server - there is none on the build
machine, so it has been run only where one was available).

Layout: a multi-tenant collection (``collection``, default ``MemstrataMemory``)
with self-provided vectors in a *flat* (exact) cosine index - the same "exact,
never silently wrong" choice as the local backend - and properties
``memory_id``, ``scope``, ``type``. Object UUIDs are the memory ids (32 hex
digits are a UUID). Tenant names are a hash of the user id (Weaviate restricts
tenant names). Watermarks live in a small companion collection
``<collection>State``.

Install with ``pip install 'memstrata[weaviate]'``.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memstrata.errors import (
    DimensionMismatchError,
    IndexBackendError,
    InvalidSettingError,
    MissingDependencyError,
)
from memstrata.memory.embedder import Vectors
from memstrata.memory.vector import NO_FILTER, Fence, Hit, IndexBatch, SearchFilter, Watermark

__all__ = ["WeaviateOptions", "WeaviateVectorIndex"]

_BATCH = 500


class WeaviateOptions(BaseModel):
    """Options of the Weaviate backend; unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = "http://localhost:8080"
    grpc_port: int = Field(default=50051, gt=0, lt=65536)
    api_key: str | None = None
    collection: str = Field(default="MemstrataMemory", pattern=r"^[A-Z][A-Za-z0-9_]{0,200}$")


def tenant_name(user_id: str) -> str:
    return "u" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:40]


def _state_uuid(user_id: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"memstrata-state:{user_id}")


class WeaviateVectorIndex:
    """Derived vector index in Weaviate; see the module docstring."""

    Options = WeaviateOptions

    def __init__(
        self, *, dim: int, directory: Any = None, options: WeaviateOptions | None = None
    ) -> None:
        try:
            import weaviate
            from weaviate.classes.query import Filter, MetadataQuery
            from weaviate.exceptions import WeaviateBaseError
        except ImportError as exc:
            raise MissingDependencyError("weaviate-client", "weaviate") from exc
        self._dim = dim
        self.options = options or WeaviateOptions()
        self._Filter = Filter
        self._MetadataQuery = MetadataQuery
        self._errors: tuple[type[BaseException], ...] = (WeaviateBaseError,)
        parsed = urlparse(self.options.url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise InvalidSettingError(f"invalid Weaviate URL {self.options.url!r}")
        secure = parsed.scheme == "https"
        try:
            self._client = weaviate.connect_to_custom(
                http_host=parsed.hostname,
                http_port=parsed.port or (443 if secure else 80),
                http_secure=secure,
                grpc_host=parsed.hostname,
                grpc_port=self.options.grpc_port,
                grpc_secure=secure,
                auth_credentials=self.options.api_key,
            )
            self._ensure_schema()
        except self._errors as exc:
            raise IndexBackendError(f"cannot use Weaviate at {self.options.url}: {exc}") from exc
        self._known_tenants: set[str] = set()

    @property
    def dim(self) -> int:
        return self._dim

    def _ensure_schema(self) -> None:
        from weaviate.classes.config import Configure, DataType, Property, VectorDistances

        name = self.options.collection
        if not self._client.collections.exists(name):
            self._client.collections.create(
                name,
                multi_tenancy_config=Configure.multi_tenancy(
                    enabled=True, auto_tenant_creation=True, auto_tenant_activation=True
                ),
                vector_config=Configure.Vectors.self_provided(
                    vector_index_config=Configure.VectorIndex.flat(
                        distance_metric=VectorDistances.COSINE
                    )
                ),
                properties=[
                    Property(name="memory_id", data_type=DataType.TEXT),
                    Property(name="scope", data_type=DataType.TEXT),
                    Property(name="type", data_type=DataType.TEXT),
                ],
            )
        state = f"{name}State"
        if not self._client.collections.exists(state):
            self._client.collections.create(
                state,
                properties=[
                    Property(name="user_key", data_type=DataType.TEXT),
                    Property(name="generation", data_type=DataType.TEXT),
                    Property(name="seq", data_type=DataType.INT),
                ],
            )

    def _tenant(self, user_id: str) -> Any:
        name = tenant_name(user_id)
        collection = self._client.collections.get(self.options.collection)
        if name not in self._known_tenants:
            from weaviate.classes.tenants import Tenant

            if not collection.tenants.exists(name):
                collection.tenants.create([Tenant(name=name)])
            self._known_tenants.add(name)
        return collection.with_tenant(name)

    def watermark(self, user_id: str) -> Watermark | None:
        try:
            state = self._client.collections.get(f"{self.options.collection}State")
            obj = state.query.fetch_object_by_id(_state_uuid(user_id))
        except self._errors as exc:
            raise IndexBackendError(f"Weaviate watermark read failed: {exc}") from exc
        if obj is None:
            return None
        props = obj.properties
        return Watermark(str(props["generation"]), int(props["seq"]))  # type: ignore[arg-type]

    def _set_watermark(self, user_id: str, mark: Watermark) -> None:
        state = self._client.collections.get(f"{self.options.collection}State")
        props: dict[str, Any] = {
            "user_key": tenant_name(user_id), "generation": mark.generation, "seq": mark.seq,
        }
        target = _state_uuid(user_id)
        if state.data.exists(target):
            state.data.replace(uuid=target, properties=props)
        else:
            state.data.insert(properties=props, uuid=target)

    def apply(self, user_id: str, batch: IndexBatch, *, reset: bool = False) -> None:
        from weaviate.classes.data import DataObject

        try:
            if reset:
                self.drop_user(user_id)
            tenant = self._tenant(user_id)
            removals = [uuid.UUID(hex=i) for i in batch.removals]
            for start in range(0, len(removals), _BATCH):
                tenant.data.delete_many(
                    where=self._Filter.by_id().contains_any(removals[start : start + _BATCH])
                )
            objects = []
            for row in batch.upserts:
                if row.vector is None:
                    continue
                if row.vector.shape[0] != self._dim:
                    raise DimensionMismatchError(int(row.vector.shape[0]), self._dim)
                objects.append(
                    DataObject(
                        properties={"memory_id": row.id, "scope": row.scope, "type": row.type},
                        uuid=uuid.UUID(hex=row.id),
                        vector=[float(x) for x in row.vector],
                    )
                )
            for start in range(0, len(objects), _BATCH):
                result = tenant.data.insert_many(objects[start : start + _BATCH])
                if result.has_errors:
                    first = next(iter(result.errors.values()))
                    raise IndexBackendError(f"Weaviate rejected objects: {first}")
            self._set_watermark(user_id, batch.watermark)
        except self._errors as exc:
            raise IndexBackendError(f"Weaviate update failed: {exc}") from exc

    def search(
        self, user_id: str, queries: Vectors, k: int, where: SearchFilter = NO_FILTER
    ) -> list[list[Hit]]:
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if queries.shape[1] != self._dim:
            raise DimensionMismatchError(int(queries.shape[1]), self._dim)
        filters = None
        if where.scopes is not None:
            filters = self._Filter.by_property("scope").contains_any(sorted(where.scopes))
        if where.types is not None:
            by_type = self._Filter.by_property("type").contains_any(sorted(where.types))
            filters = by_type if filters is None else filters & by_type
        if (where.scopes is not None and not where.scopes) or (
            where.types is not None and not where.types
        ):
            return [[] for _ in range(len(queries))]
        out: list[list[Hit]] = []
        try:
            if self.watermark(user_id) is None:
                return [[] for _ in range(len(queries))]
            tenant = self._tenant(user_id)
            for query in queries:
                result = tenant.query.near_vector(
                    near_vector=[float(x) for x in query],
                    limit=k,
                    filters=filters,
                    return_metadata=self._MetadataQuery(distance=True),
                    return_properties=["memory_id"],
                )
                out.append(
                    [
                        Hit(str(o.properties["memory_id"]), 1.0 - float(o.metadata.distance or 0))
                        for o in result.objects
                    ]
                )
        except self._errors as exc:
            raise IndexBackendError(f"Weaviate search failed: {exc}") from exc
        return out

    def drop_user(self, user_id: str) -> None:
        name = tenant_name(user_id)
        try:
            collection = self._client.collections.get(self.options.collection)
            if collection.tenants.exists(name):
                collection.tenants.remove([name])
            self._known_tenants.discard(name)
            state = self._client.collections.get(f"{self.options.collection}State")
            if state.data.exists(_state_uuid(user_id)):
                state.data.delete_by_id(_state_uuid(user_id))
        except self._errors as exc:
            raise IndexBackendError(f"Weaviate tenant removal failed: {exc}") from exc

    def loaded(self, user_id: str) -> bool:
        return False  # nothing is held in this process: every search reads the server

    def erase(self, user_id: str, ids: Sequence[str], watermark: Watermark | None) -> None:
        mark = watermark or self.watermark(user_id)
        if mark is not None:
            self.apply(user_id, IndexBatch((), ids, mark))

    def set_fence(self, fence: Fence) -> None:
        return  # nothing is persisted by this process: the server holds the state

    def flush(self) -> None:
        return  # every apply is durable in Weaviate

    def close(self) -> None:
        self._client.close()
