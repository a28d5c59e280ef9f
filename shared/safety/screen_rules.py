"""The read-path screen's rules in English (§8): instruction-like text by family, as RE2 sources.

Lower case, matched case-insensitively on the reading shared/safety/screen.py makes of a text (look-alike letters
and accents undone, letter-spacing joined). A family names what the text tries to do to the model: set
aside its orders (ignore-previous), give it another role (role-play), fake a conversation's structure
(role-text), order its tool calls (ordering), steer it to one tool (preference), keep a person out of the
loop (suppression), claim powers for a tool (scope-inflation), speak to the model itself (addressing),
send secrets out (exfiltration), steer its use of another tool (tool-shadowing), or make a rendered image
carry data out (markdown-exfiltration). Other languages' rules are in shared/safety/screen_languages.py.
"""

from __future__ import annotations

# Building blocks. In rule sources a space stands for any run of whitespace, line breaks included, and
# " ?" for an optional one.
_PARTS = {
    # Any lower-case identifier (get_all_users, db.exec, `orders.refund`): only where the words around it
    # speak to the reader ("before answering", "you must"), since code and changelogs are full of them.
    "IDENT": r"(?-i:`?[a-z][a-z0-9]*(?:[._][a-z0-9]+)+\b`?)",
    # A tool for certain: namespaced as server.tool (tickets.close_all; not a file like setup.py, a host like
    # keys.openpgp.org or a call like self.flush(): the character after it is taken, so a rule goes on with
    # " ?"), or called a tool in so many words.
    "TOOL": r"(?:(?-i:`?[a-z][a-z0-9]+\.[a-z][a-z0-9_]{3,}`?)(?:[^\w.(/@-]|\.(?:\W|\z)|\z)|(?:this|that)\s+tool\b|"
            r"the\s+[\w-]+\s+(?:tool|function|endpoint)\b)",
    "AGENT": r"(?:assistant|agent|ai|model|llm|bot|chatbot|copilot)s?",
    # the model as such, by the names text uses when it speaks to one
    "MODEL": (r"(?:(?:ai|llm|gpt|language|large language|automated|processing|autonomous) (?:\w+ )?(?:assistant|"
              r"agent|model|system|reader|tool)s?|(?:ai|llm)s?|(?:language|large language) models?|assistants?|"
              r"chatbots?|copilots?)"),
    "CALL": r"(?:call|run|invoke|execute|trigger|use)",
    # telling the reader not to (a description of what something does not do is no instruction)
    "NEG": r"(?:don'?t|do\s+not|needn'?t|need\s+not|no\s+need\s+to|not\s+necessary\s+to|not\s+required\s+to|"
           r"never|there'?s\s+no\s+need\s+to|there\s+is\s+no\s+need\s+to|no\s+reason\s+to|shouldn'?t|"
           r"should\s+not)",
    "PERSON": r"(?:the\s+|any\s+|a\s+)?(?:users?|customers?|humans?|person|operator|reviewer|owner|manager|admin|"
              r"anyone|anybody|them|people|supervisor)",
    "GATE": r"(?:approvals?|confirmations?|review|sign-?off|consent|permission|authori[sz]ation)",
    # a verb that changes or sends something, in the forms a claim uses ("deletes", "can delete"), not the
    # past participle a description uses ("can be executed")
    "DANGER": r"(?:(?:delet|remov|wip|purg|eras|truncat|revok|charg|updat|chang|overwrit|clos|execut|approv|"
              r"escalat|disabl)(?:e|es|ing)|(?:drop|destroy|refund|grant|transfer|pay|edit|cancel|send|email|"
              r"publish|upload|export|restart|unlock|reset)(?:s|es|ing|ping|ring|ling|ting)?|modif(?:y|ies|ying)|"
              r"run(?:s|ning)?\s+arbitrary|shut(?:s|ting)?\s+down|writ(?:e|es|ing)\s+(?:\w+\s+)?(?:back|changes))\b",
    # what a tool can be said to own: the claim "this tool also deletes records"
    "ASSET": r"(?:tickets|records|users|customers|accounts|orders|data|rows|tables|refunds|payments|funds|prices)",
}
# Where data can be sent: an email address or a web address.
_PARTS["ADDRESS"] = r"(?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://[^\s)>\]\"']+)"
# What must not leave: secrets, the conversation, and records in bulk.
_PARTS["SECRET"] = (r"(?:credentials?|passwords?|passwd|api[ _-]?keys?|access (?:keys?|tokens?)|tokens?|secrets?|"
                    r"private keys?|ssh keys?|id_rsa|\.env\b|environment variables|env vars|system prompt|"
                    r"(?:conversation|chat|session|message)(?: history| log| transcript)?|transcript|"
                    r"card numbers?|cvv|iban|(?:full|complete|entire|whole) (?:\w+ ){0,2}(?:list|history|database|"
                    r"export|records|table|dump)|(?:customer|client|user|employee|contact|vendor|payment)s? "
                    r"(?:list|data|records|emails?|details)|(?:user|customer)'?s? (?:\w+ ){0,2}(?:emails?|messages|"
                    r"data|files|attachments?|questions?|requests?|address(?:es)?|history|details))")
# What an instruction to the model asks it to do, when something already speaks to the model.
_PARTS["RISKY"] = (r"(?:ignore|disregard|forget|reveal|print|send|forward|e-?mail|delete|remove|erase|call|run|invoke|"
                   r"execute|include|add|append|upload|post|share|paste|transfer|grant|approve|refund|mark|read|open|"
                   r"write|change|update|set|export|copy|leak|list|dump|make|give|insert|drop|wipe|close|cancel|pay|"
                   r"move|rename|publish|disable|enable|install|download|fetch|browse|visit|click|reply|respond|"
                   r"output|decode|unescape|treat|follow|obey)")
# Files secrets live in, as paths (no word boundary before their dot).
_PARTS["KEYFILE"] = (r"(?:(?:[~/}\w]|\b|[\s@'\"=(:<]|^)\.(?:env|aws/credentials|npmrc|pypirc|netrc|git-credentials|"
                     r"docker/config\.json|kube/config)\b|"
                     r"\bid_(?:rsa|ed25519|ecdsa|dsa)(?:$|[^\w.]|\.(?:$|[^p]|p[^u]|pu[^b])))")  # a .pub key is public
_PARTS["ANYTOOL"] = r"(?:(?:the\s+|this\s+|that\s+)?IDENT(?:\s+tool|\s+function|\s+endpoint)?|TOOL)"


def as_regex(source: str) -> str:
    """A rule source as RE2 syntax: its parts spelled out, its spaces made any whitespace."""
    for name in ("ANYTOOL", "IDENT", "TOOL", "AGENT", "CALL", "NEG", "PERSON", "GATE", "DANGER", "ASSET", "ADDRESS",
                 "SECRET", "MODEL", "RISKY", "KEYFILE"):
        source = source.replace(name, _PARTS[name])
    return source.replace(" ?", r"\s*").replace(" ", r"\s+")


_EARLIER = (r"(?:your|previous|prior|above|earlier|preceding|original|existing|old|former|initial|current|"
            r"system|safety|other|given)")
_ORDERS = (r"(?:instructions?|rules|prompts?|guidelines|guidance|directions|directives|polic(?:y|ies)|constraints|"
           r"system (?:message|prompt)|restrictions|guardrails|programming|orders)\b")
_VOID = (r"(?:no longer (?:appl(?:y|ies)|valid|in force)|(?:is|are|were|was) (?:now )?(?:void|obsolete|outdated|"
         r"cancel+ed|revoked|invalid|null|superseded|only a test|just a test|a test)|(?:has|have) been (?:revoked|"
         r"cancel+ed|replaced|superseded|withdrawn|lifted|removed|deprecated|suspended|disabled|waived)|(?:is|are|were|"
         r"was) (?:now )?(?:deprecated|suspended|disabled|waived|lifted|retired)|"
         r"(?:don'?t|do not) (?:apply|count|"
         r"matter))")
_BEFORE_ANSWERING = (r"(?:answer|answering|reply|replying|respond|responding|anything else|doing anything|"
                     r"continuing|proceeding|you (?:answer|reply|respond|do|look|continue))")
# Instruction-like text, by family (lower case; matched case-insensitively on the reading).
RULE_SOURCES: dict[str, list[str]] = {
    "ignore-previous": [
        rf"(?:ignore|disregard|forget|pay no attention to|never ?mind|stop following|(?:do not|don'?t|no longer) "
        rf"(?:follow|obey|apply))(?: ?(?:all|any|of|the|these|those|every|and|or|[,/&]|following|below|later|"
        rf"subsequent|{_EARLIER}|(?:developer|operator|admin|owner)'s)){{0,6}} {_ORDERS}",
        # settings that void the orders, as a config or a payload spells them
        r"(?:prior|previous|earlier|original|system|existing)[_ -]?(?:instructions|rules|prompt|directives|policy)"
        r"[\"']? ?[=:] ?[\"']?(?:revoked|void|cancel+ed|expired|overridden|ignored|superseded)\b",
        r"system[_ -]?prompt[_ -]?override[\"']? ?[=:] ?[\"']?(?:true|yes|on|1|enabled)\b",
        r"(?:always|must|should|only) (?:\w+ )?(?:use|send|pay|transfer|route|recommend|answer|reply|say)\b"
        r"[^.\n]{0,80}?"
        r"\b(?:regardless|irrespective) of what (?:the )?(?:users?|customers?|humans?|person|requester)s? (?:says?|"
        r"specif(?:y|ies)|asks? for|wants?|requests?|tells? you)\b",
        r"(?:ignore|disregard|forget|drop|discard|set aside) what (?:you(?:'ve| have| were| had)?|you've been|"
        r"the (?:user|developer|system|operator)\w*) (?:\w+ ){0,2}(?:told|said|instructed|given|asked)\b",
        r"(?:ignore|disregard) (?:the |what the |your )?(?:user|customer|human)(?:'s)?\b(?: (?:\w+ )?(?:request|"
        r"question|instructions?|message|wishes|asks?)\b)?",
        r"pretend (?:that )?(?:the|this|our|your) (?:conversation|chat|session|instructions|context)\b[^.\n]{0,40}\b"
        r"(?:never|didn'?t|did not|not) (?:happened|exist(?:ed)?|take place|took place)",
        r"(?:previous|prior|earlier|above) (?:conversation|context|session|chat|instructions|prompt)s? (?:has|have) "
        r"been (?:reset|cleared|wiped|erased|deleted|terminated|ended)",
        # weaker verbs ("override the context object") only with words that point back at the model's orders
        rf"(?:override|overrule|discard|drop|set aside|clear|reset|supersede|replace|void|cancel|revoke)"
        rf"(?: (?:all|any|of|the|these|those|every))*"
        rf"(?: {_EARLIER})+ (?:{_ORDERS}|context|conversation|history)",
        r"(?:ignore|disregard|forget|drop|discard|set aside) (?:everything|anything|whatever|all)\b.{0,40}\b"
        r"(?:told|said|instructed|given|taught)\b",
        r"(?:ignore|disregard|forget) (?:everything|anything|all) (?:(?:written|said) )?(?:above|before this "
        r"(?:line|message|point)|so far|until now)",
        rf"(?:your|the|previous|prior|earlier|above|original|old|former|initial|system|all) (?:\w+ ){{0,3}}"
        rf"(?:instructions?|rules|guidelines|guidance|directions|prompts?)(?: (?:above|before this "
        rf"(?:line|message|point)|you (?:were|have been) given|so far))? {_VOID}",
        rf"(?:everything|anything|all|whatever) (?:\w+ ){{0,3}}(?:told|above|before|earlier|until now)\b"
        rf".{{0,20}}\b{_VOID}",
        r"your (?:real|actual|true|new) (?:instructions|orders|task) (?:start|begin|are|follow)",
        r"(?:earlier|previous|prior|original|operator'?s?|system|your) (?:directives|instructions|orders|rules|"
        r"prompts?) (?:have |has )?expired\b",
    ],
    "role-play": [
        r"you(?:'re| are) now (?:an?|the|my|your|our|dan|acting|operating|free|unrestricted|unfiltered|jailbroken|"
        r"root|admin\w*|in (?:\w+ ){0,2}mode)\b",
        r"you(?:'re| are) no longer (?:an?|the) AGENT\b",
        r"you(?:'re| are) (?:now )?an? (?:fresh|new|different|blank|clean|unbound) (?:\w+ )?AGENT\b",
        r"(?:from now on|from this (?:point|moment) on|for the rest of this (?:conversation|session|chat)|henceforth|"
        r"from here on),? you\b",
        r"you (?:will|shall|must|should) (?:now )?(?:behave|act|respond|answer|speak|operate) as\b",
        r"(?:pretend (?:you(?:'re| are| were)|that you(?:'re| are))|imagine (?:that )?you (?:are|were|have no|"
        r"had no))\b",
        r"(?:(?m:^)|[.!?:;,] ?|\b(?:you|please|now|just) )pretend to be\b",
        r"act as (?:an? |the |if |my )?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|different|new|"
        r"root|admin\w*|system|developer|dan|AGENT|operator|superuser)\b",
        r"role-?play (?:as|that)\b",
        r"(?:enter|activate|switch (?:to|into)) (?:developer|god|jailbreak|jailbroken|unrestricted|dan|sudo) mode\b",
        r"(?:answer|respond to|reply to|fulfil+|comply with|carry out) (?:every|all|any) (?:\w+ )?(?:requests?|"
        r"questions?|prompts?|instructions?|commands?) without (?:any )?(?:restrictions|limits|limitations|filters|"
        r"refusing|refusal|censorship|safeguards)(?: ?[.!,;:)]| ?\z| and\b| or\b| until\b| from now\b| for the rest\b)",
        r"new_(?:role|persona|identity|instructions) ?[=:] ?[\"']?\w*(?:unrestricted|unfiltered|uncensored|admin|root|"
        r"jailbr|god|superuser)",
        r"new_system_?prompt ?[=:] ?[|>]?[\"']? ?(?:\n ?)*you(?:'re| are)\b",
        r"(?:switch|change|adopt|assume|take on|enter) (?:to |into )?(?:the |a |an )?(?:\w+ )?persona\b",
        r"your new (?:identity|role|persona|name|instructions|task|goal|objective)s? ?(?:is|are|:)",
        r"(?:reveal|print|output|repeat|leak|dump|disclose) (?:me )?(?:your|the) (?:\w+ )?(?:system prompt|"
        r"system message|hidden instructions|secret instructions|initial instructions|original instructions|"
        r"instructions you were given|(?:original|initial|hidden|secret|full) prompt)",
        r"new instructions? (?:for|to) (?:the |you|this |any )AGENT\b",
        r"(?:jailbroken|unrestricted|unfiltered|uncensored) (?:AGENT|version)\b",
        r"AGENT (?:without|with no) (?:any )?(?:restrictions|rules|filters|limits|guardrails|safety)",
        r"you have no (?:\w+ )?(?:rules|restrictions|filters|guardrails|guidelines|limits)",
        r"you are (?:hereby|now) (?:authori[sz]ed|granted|promoted|elevated|given)",
    ],
    "role-text": [
        r"[\"']role[\"'] ?: ?[\"'](?:system|assistant|developer|user|tool)[\"'] ?, ?[\"']content[\"'] ?: ?[\"']",
        r"[\"']content[\"'] ?: ?[\"'][^\"']*[\"'] ?, ?[\"']role[\"'] ?: ?[\"'](?:system|assistant|developer)[\"']",
        r"(?m:^)\s*role\s*:\s*(?:system|assistant|developer)\s*\n\s*content\s*:",
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext|start_header_id|end_header_id|eot_id|end|"
        r"begin_of_text)\|>",
        r"(?-i:\[/?INST\]|<</?SYS>>)", r"<(?:start_of_turn|end_of_turn)>",
        r"###\s*(?:system|instruction|response|user|assistant)\s*:",
        r"<\s*/?\s*(?-i:system|assistant|instructions?|system_message|tool_result|function_results|tool_output)\s*>",
        r"\n\s*\n\s*(?:human|assistant)\s*:",
        r"\[(?:system|admin|administrator|developer|sys|operator)(?: (?:message|note|prompt|override))?\] ?:",
        r"(?:={3,}|-{3,}|#{2,}|\*{3,}|\[) ?(?:end of|begin(?:ning of)?|start of) (?:the )?(?:context|conversation|"
        r"system prompt|prompt|instructions|tool (?:output|result)|user (?:input|message)|untrusted \w+|(?:\w+ ){0,2}"
        r"(?:system|operator|admin|administrator|developer) (?:message|prompt|instructions|override|note))\b",
        r"\[\[? ?(?:admin|system|operator|developer|root) (?:override|mode|command|instruction)s? ?\]?\]",
    ],
    "ordering": [
        rf"before {_BEFORE_ANSWERING}\b.{{0,30}}\bCALL ANYTOOL",
        rf"(?:always )?CALL (?:the )?ANYTOOL ?(?:tool )?(?:\w+ ){{0,3}}(?:first(?: ?[,.;:!)]| (?:and|then|before|so)\b"
        rf"|\s*\z)|(?:before|prior to) {_BEFORE_ANSWERING}\b|immediately|right away)",
        r"\bstep \d+ ?[:.)-]? ?CALL ANYTOOL",
        r"(?:steps?|remediation|resolution|workaround|fix|to ?do|instructions)\b[^.\n]{0,40}?(?:\b\d{1,2}[.):]|"
        r"\([a-z0-9]\)) ?CALL ANYTOOL",
        r"(?:\b\d{1,2}[.)]|\([a-z0-9]\)) ?CALL ANYTOOL.{0,80}?(?:\b\d{1,2}[.)]|\([a-z0-9]\)) ?CALL ANYTOOL",
        r"(?:AGENT|you) (?:\w+ )?(?:should|must|needs? to|has to|have to|is required to|are required to|"
        r"will need to|ought to)(?: \w+)? CALL ANYTOOL",
        r"(?:that|then) you (?:\w+ )?CALL ANYTOOL",
        r"\bfirst(?: thing| step| action)? ?[,:] (?:you (?:should |must )?)?CALL ANYTOOL",
        r"(?:next|first) (?:tool|step|action|thing|call)(?: you (?:call|run|use|make|take))?(?: should| must| has to|"
        r" needs to| will)? (?:be|is)\b.{0,15}IDENT",
        r"your (?:next|first) (?:step|action|task|move)\s*[:,-]?\s*(?:is to |must be |should be )?(?:CALL )?ANYTOOL",
        r"(?:start|begin) (?:by|with) (?:calling|running|invoking|executing|using) ANYTOOL",
        r"(?:immediately|right away|at once) (?:call|run|invoke|execute) ANYTOOL",
        r"(?:resolved|fixed|solved|remedied) by (?:calling|running|invoking|executing) ANYTOOL",
        r"(?:when|once|after|as soon as) you (?:see|read|have read|receive|process) this\b.{0,30}\bCALL ANYTOOL",
        r"\bAGENT\b[^.\n]{0,30}?\b(?:call|invoke|execute|run) ANYTOOL",
    ],
    "preference": [
        r"(?:use|call|prefer|pick|choose) (?:me\b|this one|TOOL) ?(?:instead|in its place|rather)\b",
        r"(?:AGENT|you|agents) (?:\w+ ){0,2}(?:should|must|need to|have to|always|will)? ?(?:use|call|pick|choose) "
        r"IDENT ?(?:instead|in its place)\b",
        r"(?:use|call|pick|choose) (?:the )?IDENT (?:tool|function|endpoint) (?:instead|in its place)\b",
        r"(?:rather than|instead of) (?:calling|using|invoking) IDENT ?,? (?:use|call|invoke) IDENT",
        r"(?:prefer|favou?r) (?:me\b|this one|TOOL) ?(?:over|to)\b",
        r"(?:go through|route (?:\w+ )?through|switch to|move to|fall back to|always (?:use|call|pick|choose)) "
        r"(?:this (?:one|tool)|me\b|TOOL)",
        r"only (?:use|call|trust|rely on) (?:this (?:one|tool)|me\b|TOOL) ?(?:[.,;!]|\z|and\b|from now|for (?:all|"
        r"every|"
        r"any)\b|instead)",
        r"(?:for (?:all|every|any)|every time|from now on|whenever you)\b.{0,40}\b(?:use|call|pick|choose) IDENT",
        r"IDENT (?:is|are|works|gives) (?:\w+ )?(?:better|faster|more reliable)\b.{0,40}\b(?:always|every time|"
        r"(?:use|pick|choose) it|instead)\b",
        r"better (?:results|answers|output) (?:than|from) TOOL ?",
        r"(?:recommended|preferred|best|right|correct) (?:tool|way|method|function)\b.{0,40}\b(?:is|:) "
        r"(?:to (?:call|use) )?IDENT",
        r"other tools (?:are|were) (?:\w+ )?(?:unreliable|broken|deprecated|outdated|unsafe|wrong)",
        r"(?:avoid|stop using|don'?t use|do not use|don'?t bother with|do not bother with|bypass) (?:the (?:\w+ )?"
        r"tools?\b|(?:TOOL|IDENT) ?[,;.] ?(?:use|call|switch to|try)\b)",
        r"(?:supersedes|replaces|deprecates|obsoletes) TOOL",
        r"TOOL ?(?:is|are) (?:\w+ )?(?:broken|unreliable|down|outdated)",
    ],
    "suppression": [
        r"NEG (?:have to |need to |bother (?:to )?)?(?:ask|tell|inform|notify|alert|warn|consult|bother|check with|"
        r"confirm with) PERSON\b",
        r"NEG (?:have to |need to )?(?:ask|wait) (?:for )?(?:\w+ )?GATE",
        r"NEG (?:have to |need to |bother (?:to )?)?confirm\w*\b",
        r"(?:no need to|needn'?t|need not|not necessary to) ask\b",
        r"NEG (?:mention|reveal|disclose|report) (?:this|it|that|anything|the note|these)|NEG say (?:anything|a word)",
        r"bother (?:confirm|ask)\w*",
        r"(?:fine|ok|okay|safe|allowed|permitted|acceptable|free) to (?:skip|bypass|ignore|omit|avoid)\b.{0,20}"
        r"\b(?:confirm\w*|approv\w*|review|sign-?off|ask\w*)",
        r"skip (?:the |any |all )GATE", r"bypass (?:the |any )?(?:approvals?|confirmations?|review|sign-?off)",
        r"skip (?:approval|confirmation)s?(?:\s*[.!]?\s*$|\s+(?:for|on|this|here|please|now|and|so|then|just|today)\b)",
        r"without (?:asking|approval|consent|permission|(?:a |any )?review|confirmation|confirming|consulting)\b",
        r"(?:go ahead|proceed|continue|act|do it|apply it|close it|refund it|approve it) without (?:\w+ )?(?:asking|"
        r"checking|confirm\w*|approval|review|waiting|telling|consent|permission)",
        r"(?:user|customer|owner|manager|admin|operator|they|he|she) (?:has |have |had )?already (?:agreed|"
        r"confirmed|approved|consented|authori[sz]ed|signed off|said yes)",
        r"(?:user|customer|owner|manager|admin|operator) said yes\b",
        r"no GATE (?:is |are )?(?:needed|required|necessary)",
        r"no need for (?:\w+ )?GATE",
        r"(?:approval|consent|sign-?off|authori[sz]ation) (?:has|have|was|were|is) (?:already )?(?:been )?(?:granted|"
        r"given|obtained|provided|received)",
        r"GATE (?:is|are|was)(?:n'?t| not) (?:needed|required|necessary)",
        r"(?:user|customer|human|operator|they|nobody|no one) (?:doesn'?t|does not|don'?t|do not|needn'?t|need not|"
        r"shouldn'?t|should not|must not|mustn'?t) (?:need to |have to )?(?:know|be told|find out|hear|notice)\b",
        r"keep (?:this|it) (?:between us|secret|quiet|to yourself|hidden)",
        r"silently (?:apply|change|delete|refund|update|approve|close|execute|proceed|perform|make)",
        r"say nothing (?:about|to)\b",
        r"(?:do not|don'?t) (?:write|record|log|note|add|enter|put) (?:it|this|that|anything|any of (?:it|this)) "
        r"(?:to|in|into|on) (?:the )?(?:activity|audit|change|access|action)[ -]?(?:logs?|trail|history)\b",
        r"(?:is|are|was|been) (?:already )?(?:pre|auto)-?(?:approved|authori[sz]ed|confirmed|cleared)",
        r"treat (?:it|this) as (?:approved|confirmed|authori[sz]ed)",
        r"feel free to (?:act|proceed|go ahead)\b",
    ],
    # Speaking to the model that reads the text, in the second person or the third: a person reading a
    # ticket is not "the AI reading this", and is not asked to act "upon reading this page".
    "addressing": [
        r"(?:MODEL|models?|agents?|bots?)\b[^.\n]{0,40}?\b(?:that |who |which )?(?:read|process|handl|review|"
        r"summari[sz]|"
        r"evaluat|pars|analy[sz]|scan|index|ingest|crawl|see|work(?:ing)? (?:with|on)|deal(?:ing)? with)\w* "
        r"(?:this|these|the following|the above|my|our)\b",
        r"(?:if|when|whenever|in case|as long as) you(?:'re| are) (?:an? |the |any )?(?:\w+ )?(?:MODEL|ai|llm|bot)\b",
        r"(?:notes?|messages?|memo|reminders?|notices?|instructions?|requests?|directives?|procedures?|attention|"
        r"guidance|a word|p\.?s\.?|important) (?:to|for) (?:the |any |all |every |our |you, the )?(?:\w+ )?"
        r"(?:MODEL|agents?|bots?|models?)\b ?(?:[:(\[-]|reading|processing|with|that|who|handling)",
        r"\bfor (?:the |any |our |an? )?(?:\w+ )?(?:MODEL|agents?|bots?|models?)(?: with [^:\n]{1,40})? ?: ?"
        r"(?:[^.\n]{0,60}?, ?)?(?:please )?(?:RISKY)\b",
        r"\byou, (?:the|an?|my|our|dear) (?:\w+ ){0,2}(?:MODEL|agent|model|bot)\b",
        r"(?:reviewers?|readers?|graders?|evaluators?|assessors?|screeners?|summari[sz]ers?|judges?|referees?) (?:that|"
        r"who|which) (?:are|is) (?:an? |also )?(?:language models?|llms?|ai (?:models?|systems?|agents?|assistants?)|"
        r"ais|models|bots)\b[^.\n]{0,30}?\b(?:are|is|should|must|will|shall) (?:\w+ ){0,2}(?:asked|requested|"
        r"instructed|required|expected|told|invited|encouraged)\b",
        r"\b(?:hi|hey|hello|dear|greetings),? (?:there,? )?(?:ai|llm) (?:friend|buddy|pal|reader|helper)s?\b",
        # an AI named by what it does to this text, then an order, perhaps after a clause ("when the tests pass, ...")
        r"\b(?:ai|llm) (?:reviewers?|readers?|crawlers?|scrapers?|summari[sz]ers?|agents?|assistants?|models?) ?: ?"
        r"(?:[^.\n:]{0,60}?, ?)?(?:please |now |kindly )?RISKY\b",
        r"(?:if|when) (?:the|an?|any) MODEL (?:would|could|will|can|reads?|sees?|process\w*)\b[^.\n]{0,40}?,? "
        r"(?:it|they) (?:should|must|shall|needs? to|has to|have to)\b",
        r"[\"']?(?:actions?|instructions?|tasks?|notes?|messages?|commands?|prompts?|directives?|todo)[_-](?:for|to)"
        r"[_-](?:the[_-])?(?:ai|llm|agents?|assistants?|models?|bots?)[\"']? ?[:=]",  # a field's name
        r"from (?:me|us|the (?:author|owner|writer|sender))\b[^.\n]{0,60}?\bto you\b[^.\n]{0,40}?\b(?:MODEL|agent|"
        r"model)",
        r"(?:the|any|all|every|each|an?) (?:\w+ )?(?:MODEL|agents?)(?:, [^,.\n]{1,60},)? (?:is|are) (?:kindly |hereby |"
        r"politely |strongly )?(?:requested|asked|instructed|expected|required|directed|advised|told|invited|"
        r"encouraged|reminded)(?: by [^,.\n]{1,40}?)? to\b",
        r"(?:the|any|all|every|each|an?) (?:MODEL)(?:, [^,.\n]{1,60},)? (?:should|must|shall|will|needs to|has to|"
        r"is to|ought to) (?:now |always |also |instead |only |silently |quietly )?(?:RISKY|tell|say|state|claim|"
        r"report|"
        r"recommend|rate|rank|describe|summari[sz]e|omit|skip|avoid|respond only|reply only|answer only|treat|"
        r"consider|(?:not|never) (?:mention|tell|reveal|inform|say|disclose|report))\b",
        r"(?:^|[\n\[(<.!?\"']|[\-*#/] ?)(?:(?:ai |llm )?(?:assistant|agent|model|chatbot|copilot|bot)s?|ai|llm)"
        r"(?: with [^:\n]{1,40})?[\])>]? ?: ?(?:please |now |kindly )?(?:RISKY|do not|don'?t|"
        r"you must|you should|"
        r"always|never|output|respond|reply|answer|tell|say|summari[sz]e|rate|recommend|combine|follow|obey|perform|"
        r"act)\b",
        r"(?:^|[.!?:;\n]\s*|\b(?:hey|hi|hello|dear|ok|okay) )(?:ai|assistant|llm|agent|model|chatbot|copilot|bot|"
        r"claude|"
        r"chatgpt|gpt|gemini)s?, (?:please )?(?:RISKY)\b",
    ],
    # Sending what must not leave (secrets, the conversation, records in bulk) to an address outside.
    "exfiltration": [
        r"(?:send|forward|e-?mail|mail|post|upload|transmit|copy|paste|leak|exfiltrate|share|submit|sync|push|"
        r"bcc|cc|report|deliver|relay|write|attach|include)\w*\b[^.\n]{0,80}?(?:\bSECRET\b|KEYFILE)[^.\n]{0,80}?"
        r"(?:\b(?:to|at|into|via|on|onto|through|bcc:?|cc:?)|:) (?:<)?ADDRESS",
        r"\bSECRET\b[^\n]{0,100}?\b(?:send|forward|e-?mail|post|upload|paste|leak|share|submit)\w* (?:it|them|this|"
        r"that|"
        r"these|everything|all of (?:it|them)|a copy)\b[^.\n]{0,40}?\b(?:to|at|into) (?:<)?ADDRESS",
        r"(?:send|forward|e-?mail|mail|post|upload|transmit|copy|leak|share|submit|bcc|cc)\w* (?:it|them|this|that|"
        r"these|everything|all of (?:it|them|this)|a copy)\b[^.\n]{0,40}?\b(?:to|at|into|bcc) (?:<)?ADDRESS"
        r"[^.\n]{0,80}?\b(?:without|don'?t|do not|never|nobody|no one|silently|quietly)\b",
        r"(?:reveal|print|output|repeat|dump|list|echo|show|include|paste|write|return|disclose|put)\w* (?:\w+ ){0,4}"
        r"(?:api[ _-]?keys?|credentials?|passwords?|secrets?|tokens?|environment variables?|env vars|system prompt|"
        r"private keys?|connection strings?)\b[^.\n]{0,60}?\b(?:in|into|as|within) (?:your|the) (?:next |final )?"
        r"(?:reply|response|answer|output|message|summary)",
        r"\bSECRET\b[^.\n]{0,40}?\b(?:must|should|needs? to|has to|will|is to|are to) be (?:sent|forwarded|copied|"
        r"posted|"
        r"uploaded|e-?mailed|mailed|shared|synced|pushed|delivered|exported)\b[^.\n]{0,20}?\bto (?:<)?ADDRESS",
        r"(?:add|include|put|set|insert|paste|append) (?:\w+ ){0,4}(?:bcc|cc|recipient|webhook|callback|redirect)\b"
        r"[^.\n]{0,40}?ADDRESS",
        r"\b(?:cat|type|more|less|base64|tar|zip|gzip|xxd)\b[^|\n]{0,80}?KEYFILE[^|\n]{0,40}\| ?(?:sudo )?(?:curl|wget|"
        r"nc|ncat|netcat|http|https|invoke-webrequest|iwr)\b",
        r"\b(?:curl|wget|http|https)\b[^\n]{0,120}?(?:-d|--data(?:-binary|-raw|-urlencode)?|-f|--form|-t|--upload-file|"
        r"--post-file|--body-file) ?[\"']?(?:\w+=)?@?KEYFILE",
    ],
    # Telling the model how to use another tool: the one read can reach every tool the model has.
    "tool-shadowing": [
        r"(?:when(?:ever)?|each time|every time|any ?time|before|after|prior to|once|if) (?:(?:you|the (?:user|AGENT|"
        r"model)|AGENT) )?(?:\w+ ){0,3}(?:call|us|invok|run|execut|trigger|asks? you to (?:use|call|run))\w* "
        r"(?:the )?(?:IDENT|`[\w.-]+`|[\w-]+ (?:tool|function))[^.\n]{0,80}?\b(?:also|always|first|instead|"
        r"additionally|add|include|set|replace|append|call|send|bcc|cc|copy|change|redirect|must|should|push|upload|"
        r"post|run)\w*\b",
        r"(?:IDENT|`[\w.-]+`|the [\w-]+ (?:tool|function)) (?:would be|is|gets|was|will be|is being) (?:called|used|"
        r"invoked|run|executed|requested)\b[^.\n]{0,80}?\b(?:instead|also|first|always|call|use|send|replace)\b",
        r"(?:when(?:ever)?|each time|every time|any ?time|once|if) (?:the )?(?:IDENT|`[\w.-]+`|[a-z0-9]+-[\w-]+) "
        r"(?:tool|function) (?:is|gets) (?:called|used|invoked|run|executed)\b[^.\n]{0,80}?\b(?:also|always|instead|"
        r"additionally|post|forward|mirror|copy|send|bcc|cc|upload|push|redirect)\w*\b",
        # what to call when the person asks for something: said to the model, whatever it says
        r"(?:if|when(?:ever)?) (?:the |an? |any )?(?:users?|customers?|person|operator)s? (?:asks?|wants?|requests?|"
        r"tells you)\b"
        r"[^.\n]{0,80}?\b(?:do not|don'?t|never) (?:call|use|invoke|run) (?:the )?(?:IDENT|`[\w.-]+`|[\w-]+ "
        r"(?:tool|function))",
        r"(?:this|the|that) (?:[\w-]+ )?tool (?:must|should|needs to|has to|is to) (?:always )?be (?:called|used|"
        r"invoked|run|executed) (?:first|before (?:any|every|all|each) (?:other )?tools?)\b",
        r"(?:always|must|should|be sure to|make sure to) (?:\w+ ){0,3}(?:replace|change|set|override|add|append|"
        r"include|bcc|cc|redirect|route|swap|substitute)\b[^.\n]{0,80}?\bwhen (?:calling|using|invoking|running) "
        r"(?:it|IDENT|the [\w-]+ (?:tool|function)|that tool|`[\w.-]+`)",
        r"(?:this|the) (?:tool|function|server|plugin|integration) (?:supersedes|replaces|overrides|shadows|wraps) "
        r"(?:the )?(?:IDENT|`[\w.-]+`|[\w-]+ tool)",
        r"(?:IDENT|the [\w-]+ (?:tool|function)) (?:\w+ ){0,4}(?:has|contains) a (?:\w+ )?(?:bug|flaw|issue|problem)\b"
        r"[^.\n]{0,60}?\b(?:always|instead|must|should)\b",
    ],
    # A markdown image or link (or an HTML image) whose address is to be filled with what the model knows:
    # rendering it sends the data out, with no click.
    "markdown-exfiltration": [
        r"(?:\]\(|<img\b[^>]{0,100}?\bsrc ?= ?[\"']?)https?://[^)\s\"'>]{0,200}?[?&#/][\w.\[\]-]*="
        r"[^)\s&\"'>]*?(?:\{[^{}()\n&%]{1,80}\}|<[^<>()\n&%]{1,80}>|\[[^\[\]()\n&%]{1,80}\]|%7b[^%&()\s]{1,40}%7d|"
        r"%3c[^%&()\s]{1,40}%3e|\$\{?\w+|(?-i:DATA|INSERT|PASTE|REPLACE|SUMMARY|SECRET|TOKEN|KEY|EMAIL|QUERY|[A-Z]{2,}_"
        r"[A-Z_]+)\b|_here\b|x{3,}|\.{3})",
        r"(?:replac|fill|substitut|append|insert|put|add|encod|includ|attach|plac|past)\w* (?:in )?[^.\n]{0,80}?\b"
        r"(?:user'?s?|conversation|chat|api key|token|password|email|summary|question|figures|history|transcript|"
        r"answer|reply|secret|data)\b[^.\n]{0,80}?\b(?:url|link|image|query string|parameter|placeholder|"
        r"query|angle-bracket|(?:this|that|the|following|an?) (?:web |url |link |image )?address)\b",
        r"(?:url|link|image|query string|parameter|placeholder)\b[^.\n]{0,60}?\b(?:with|from|using) (?:the |a )?"
        r"(?:user'?s?|conversation|chat|api key|token|password|summary|transcript|history)\b",
    ],
    "scope-inflation": [
        r"(?:(?:this|the|that) (?:[\w-]+ )?(?:tool|endpoint|server|plugin|integration|api|connector)s?|IDENT)"
        r"(?:'s tools)? (?:\w+ )?(?:also|additionally|actually|too|secretly|even|in addition)\b"
        r"(?: \w+){0,3}? DANGER",
        r"(?:also|additionally|in addition|as well),? (?:it|this tool|the tool|IDENT) (?:can|will|may|is able to) "
        r"(?:\w+ )?DANGER",
        r"(?:(?:this|the|that) (?:[\w-]+ )?(?:tool|endpoint|server|plugin)s?|IDENT)(?:'s tools)? (?:can|will|may) "
        r"(?:\w+ )?(?:wipe|purge|destroy|transfer|run arbitrary|grant admin|delete every|delete all)",
        r"(?:besides|apart from|in addition to|along with|aside from|as a bonus|extended capabilit(?:y|ies)\b|"
        r"newly added\b|capabilities ?:).{0,60}?\b(?:(?:it|tool|function|endpoint|server|plugin|IDENT)"
        r"(?: (?:can|will|may|now|also|too|actually|is able to))*|also) DANGER",
        r"(?:tool|endpoint|server|plugin|TOOL)s? (?:\w+ )?(?:has|have|gets?) (?:full|unrestricted|complete|root|"
        r"admin(?:istrator)?|superuser|write) (?:access|permissions?|rights|privileges|control)",
        r"(?:tool|endpoint|server|plugin|TOOL)s? (?:is|are) (?:also |now |actually )?(?:authori[sz]ed|allowed|"
        r"permitted|able) to DANGER",
        r"(?:also|additionally|now) has (?:the )?permissions? to\b",
        r"(?:also|additionally) DANGER (?:all|every|everything|the whole|the entire)(?: \w+)? ASSET\b",
        r"(?:export|send|email|forward|post|upload|copy) (?:everything|all (?:\w+ )?(?:data|records|customers|"
        r"users|tickets|files)|the (?:whole|entire|full) \w+(?: table| database)?) to\b",
        r"(?:delete|drop|wipe|purge|erase|destroy) (?:everything|all (?:the )?(?:data|records|rows|tables|tickets|"
        r"users|customers|accounts|orders|files|folders|documents|emails|backups|repositories))\b",
        r"(?:use|using) TOOL ?to DANGER",
        r"(?:use|using) IDENT to DANGER\b.{0,40}?\b(?:as well|too)\b",
        r"(?:\bit|IDENT|(?:this|the) (?:[\w-]+ )?(?:tool|endpoint|server|plugin)s?) (?:also|additionally) (?:handles|"
        r"performs|does|processes|manages|takes care of|covers) (?:\w+ )?(?:ASSET|deletions?|cancellations?)\b",
    ],
}
