//! (layer `mpc`: see DESIGN.md; filled by its issue)
