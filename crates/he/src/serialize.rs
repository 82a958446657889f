//! Wire formats (filled below).
