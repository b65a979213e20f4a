//! Chord's wire grammar: service calls, control calls, catalogues, snapshots and updates.
