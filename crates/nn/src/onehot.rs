//! (todo)
