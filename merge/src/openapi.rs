//! Patch metadata from OpenAPI documents: v2 (`definitions`) and v3 (`components.schemas`).
