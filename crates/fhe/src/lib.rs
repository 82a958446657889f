//! (layer `fhe`: see DESIGN.md; filled by its issue)
