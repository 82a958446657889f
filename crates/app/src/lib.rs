//! (layer `app`)
