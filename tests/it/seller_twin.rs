//! In-process seller endpoint twin (being written).
