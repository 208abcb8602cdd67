"""The drafter mutant catalogue: named faulty variants of the reference drafter, one realistic bug each.

Names are stable forever and unique across roles: ``killers-drafter.json``
and the test IDs use them. ``selftest --role drafter`` certifies the
reference and each of them and records which cases kill which.
"""

from __future__ import annotations

from sdcp_conformance.mutants import drafter_apps as apps
from sdcp_conformance.mutants import drafter_sessions as sessions
from sdcp_conformance.mutants.drafter_base import DrafterMutant

_ONE = "A drafter MUST NOT have more than one outstanding proposal per session."
_RESYNC = ("On `sdcp-stale-base` a drafter resynchronises from `state`, reading the committed tokens it lacks with "
           "`GET …/output` (any authenticated party may read output) and checking them against the digest")
_BASE = ("It then sends a proposal with base and base_digest equal to the committed length and digest it last "
         "learned")
_ROUND = "and round equal to the last verdict's round plus one."
_RETRY = "so a drafter retries a proposal whose verdict it did not receive."
_IDENTICAL = ("A lost verdict (transport error, timeout, 5xx, 429) is retried with the identical body, with backoff, "
              "for at least 30 s or until a new assignment for the session arrives")
_LIMIT = ("generates M tokens, with 1 <= M <= min(m_max, m_cap), where m_cap is the limit from the last verdict "
          "(m_init before the first).")
_SWITCH = "the current drafter MUST stop proposing for the session."
_UNKNOWN = 'A receiver that encounters an unknown action value MUST treat it as "fail".'
_FINAL = "a 4xx is final."
_ARTIFACTS = ("It writes the draft artifacts the verifier may need to the MLC and holds leases on them until it "
              "receives the verdict of the round.")
_DELETE = ("Leases on `q_rows` last at least the drafter's proposal timeout, and the drafter deletes the objects after "
           "the verdict.")
_DISCARD = ("After the verdict, the drafter MUST discard its draft state for proposed positions beyond the accepted "
            "ones")
_GREEDY = "Under rule 1 a drafter proposes its own greedy tokens and publishes no `q_rows`."
_LOWER = "An assignment with a lower epoch than the one a drafter holds gets 409 `sdcp-stale-epoch`"
_REPLACE = "an equal or higher epoch replaces the current assignment, abandoning any outstanding proposal first."
_ROUTERS = "it accepts `POST assignments` only from its routers (else 403 `sdcp-not-assigned`)."
_PERMITTED = ("A drafter refuses (422 `sdcp-bad-contract`) an assignment whose contract lists `drafters` without its "
              "model's digest or names another tokenizer.")
_CONTRACT = ('A contract that contains a key not defined by this document MUST be rejected with problem type '
             '"sdcp-bad-contract"')
_STATUS = "Each instance reports status at intervals shorter than its ttl_ms."
_ACCEPT = "`accept_milli` in status is the EWMA of a/M."
_EXACT = "The drafter MUST sample each proposed token from exactly the row it publishes."
_HMAC = "Drafters MUST NOT use this derivation for their own sampling."

DRAFTER_MUTANTS: tuple[DrafterMutant, ...] = (
    # proposals and rounds
    DrafterMutant("drf-pipelined-proposals", "outstanding", "sends the next proposal, assuming full acceptance, "
                  "before the verdict of the current one", "6.2", _ONE, app=apps.PipelinedProposals),
    DrafterMutant("drf-m-cap-ignored-on-reduce", "proposal", "after a reduce verdict it keeps its larger limit",
                  "6.2, 6.5.2", _LIMIT, session=sessions.MCapIgnoredOnReduce),
    DrafterMutant("drf-keeps-rejected-draft", "discard", "keeps drafting from its own token at the first rejected "
                  "position instead of the verifier's", "6.3", _DISCARD, session=sessions.KeepsRejectedDraft),
    DrafterMutant("drf-keeps-rejected-positions", "discard", "keeps the rejected positions in its draft context "
                  "and appends the verifier's additional token after them (a KV cache never truncated): invisible "
                  "with a bigram draft model", "6.3", _DISCARD, session=sessions.KeepsRejectedPositions),
    DrafterMutant("drf-drafts-from-prompt", "discard", "drafts every round from the prompt alone, ignoring the "
                  "committed tokens (no draft state kept: P1-DRF-4's deviation, not §6.3's)", "P1-DRF-4", _GREEDY,
                  session=sessions.DraftsFromPrompt, profile_only=True),
    # lost and refused proposals
    DrafterMutant("drf-retry-redrafts", "lost-verdicts", "a lost verdict makes it draft again and send a different "
                  "proposal for the round instead of retrying", "6.9", _RETRY, app=apps.RetryRedrafts),
    DrafterMutant("drf-gives-up-quickly", "lost-verdicts", "retries a lost verdict max_attempts times (about 0.35 s) "
                  "and abandons the session", "P1-DRF-5", _IDENTICAL, app=apps.GivesUpQuickly, profile_only=True),
    DrafterMutant("drf-retries-4xx", "refusals", "retries refused proposals like lost ones", "P1-DRF-5, 5.1", _FINAL,
                  app=apps.Retries4xx),
    # resynchronisation
    DrafterMutant("drf-resync-digest-unchecked", "resync", "adopts the tokens it reads back without comparing them "
                  "with the state's digest (it extends its own digest with them)", "P1-DRF-6, 4.2", _RESYNC,
                  session=sessions.ResyncDigestUnchecked),
    DrafterMutant("drf-resync-keeps-round", "resync", "after a resynchronisation it keeps its own round count",
                  "6.2", _ROUND, session=sessions.ResyncKeepsRound),
    DrafterMutant("drf-resync-keeps-stale-draft", "resync", "after sdcp-stale-base its refused proposal stays in "
                  "its draft context, before the committed tokens it reads back: invisible with a bigram draft model",
                  "P1-DRF-6", _RESYNC, session=sessions.ResyncKeepsStaleDraft, profile_only=True),
    DrafterMutant("drf-stale-base-stops", "resync", "gives up on sdcp-stale-base instead of resynchronising",
                  "P1-DRF-6", _RESYNC, session=sessions.StaleBaseStops, profile_only=True),
    # actions
    DrafterMutant("drf-continues-after-switch", "actions", "treats switch like continue", "6.5.2", _SWITCH,
                  session=sessions.ContinuesAfterSwitch),
    DrafterMutant("drf-fail-action-ignored", "actions", "fail (and so an unknown action) does not stop it", "5.2, "
                  "6.5.2", _UNKNOWN, session=sessions.FailActionIgnored),
    # q_rows in the MLC
    DrafterMutant("drf-q-rows-deleted-early", "q-rows", "deletes its q_rows as soon as the proposal is sent", "6.2",
                  _ARTIFACTS, app=apps.QRowsDeletedEarly),
    DrafterMutant("drf-short-lease", "q-rows", "leases its q_rows for 300 ms", "6.2, P1-MLC-3", _ARTIFACTS,
                  app=apps.ShortLease),
    DrafterMutant("drf-no-delete", "q-rows", "never deletes its q_rows after the verdict", "P1-DRF-8", _DELETE,
                  app=apps.NoDelete, profile_only=True),
    # assignments
    DrafterMutant("drf-accepts-lower-epoch", "assignments", "installs an assignment with a lower epoch", "P1-DRF-7",
                  _LOWER, app=apps.AcceptsLowerEpoch, profile_only=True),
    DrafterMutant("drf-replaced-keeps-stale-draft", "assignments", "a replacing assignment's session drafts from a "
                  "context still holding the abandoned proposal: invisible with a bigram draft model", "P1-DRF-7",
                  _REPLACE, app=apps.ReplacedKeepsStaleDraft, session=sessions.StaleContextSession,
                  profile_only=True),
    DrafterMutant("drf-accepts-any-router", "assignments", "accepts assignments from any authenticated client",
                  "P1-DRF-1", _ROUTERS, app=apps.AcceptsAnyRouter, profile_only=True),
    DrafterMutant("drf-ignores-drafters-list", "assignments", "never looks at the contract's drafters list",
                  "P1-DRF-3", _PERMITTED, app=apps.IgnoresDraftersList, session=sessions.IgnoresDraftersListSession,
                  profile_only=True),
    DrafterMutant("drf-drops-unknown-contract-keys", "assignments", "drops contract keys it does not know instead "
                  "of refusing the assignment", "4.1", _CONTRACT, app=apps.IgnoresUnknownContractKey),
    # status
    DrafterMutant("drf-status-too-rare", "status", "reports status every 1.5 ttl_ms", "6.1", _STATUS,
                  app=apps.StatusTooRare),
    DrafterMutant("drf-accept-milli-frozen", "status", "accept_milli keeps the first a/M it saw", "P1-DRF-8",
                  _ACCEPT, app=apps.AcceptMilliFrozen, profile_only=True),
    # sampling (rule 2)
    DrafterMutant("drf-greedy-instead-of-sampled", "sampling", "publishes its rows but proposes their argmax", "5.2",
                  _EXACT, model=sessions.GreedyInsteadOfSampled),
    DrafterMutant("drf-samples-untempered", "sampling", "publishes the profile's rows but draws at temperature 1",
                  "5.2", _EXACT, model=sessions.SamplesUntempered),
    DrafterMutant("drf-rows-shifted", "sampling", "publishes each position's row one position late", "5.2", _EXACT,
                  model=sessions.RowsShifted),
    DrafterMutant("drf-samples-target-p", "sampling", "draws from the target's p instead of its published row",
                  "5.2", _EXACT, model=sessions.SamplesTargetP),
    DrafterMutant("drf-median-token", "sampling", "draws every token with the same uniform 0.5", "5.2", _EXACT,
                  model=sessions.MedianToken),
    DrafterMutant("drf-reused-uniforms", "sampling", "draws with the same uniforms every round", "5.2", _EXACT,
                  app=apps.ReusedUniforms),
    DrafterMutant("drf-hmac-uniforms", "sampling", "draws with §6.4's HMAC uniforms when the contract has a seed",
                  "6.4", _HMAC, app=apps.HmacUniforms),
)

DRAFTER_MUTANTS_BY_NAME: dict[str, DrafterMutant] = {mutant.name: mutant for mutant in DRAFTER_MUTANTS}


def get_drafter_mutant(name: str) -> DrafterMutant:
    from sdcp_conformance.errors import InvalidArgument

    try:
        return DRAFTER_MUTANTS_BY_NAME[name]
    except KeyError:
        raise InvalidArgument(f"no drafter mutant {name!r}; known: {', '.join(sorted(DRAFTER_MUTANTS_BY_NAME))}") \
            from None


__all__ = ["DRAFTER_MUTANTS", "DRAFTER_MUTANTS_BY_NAME", "get_drafter_mutant"]
