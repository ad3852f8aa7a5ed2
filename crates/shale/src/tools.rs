//! Library side of the `shale ldb` and `shale sst_dump` tools (filled in later).
