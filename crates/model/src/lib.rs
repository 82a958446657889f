//! (layer `model`)
