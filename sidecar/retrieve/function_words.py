"""Function words of the spaced languages the embedded model reads and Obsidian's help is written in, and of
Czech, Indonesian, Hebrew and Persian. Pure data.

A function word ("the", "de", "и") is in nearly every section: it tells BM25 nothing, makes FTS5
score every row, and as a query term it counts towards a hit's coverage and gets highlighted. A
language missing here is searched as if its articles were keywords: help-pt-br without its list
scored nDCG@10 0.787 against 0.810 (docs/ranking.md). One set for every language, because a query
does not say which language it is in; words that are content in another language are left out ("vi",
Danish for "we", is an editor; "ci", Italian for "us", a build server; German "man" and "war" are
English nouns). Unspaced scripts (Chinese, Japanese, Korean) are cut into bigrams instead
(cjk.query_grams) and need no list.
"""

from __future__ import annotations

BY_LANGUAGE: dict[str, str] = {
    "en": "a about above after again against all am an and any are as at be because been before being below "
          "between both but by can could did do does doing down during each few for from further had has have "
          "having he her here hers him his how i if in into is it its itself just me more most my no nor not of "
          "off on once only or other our ours out over own same she should so some such than that the their "
          "theirs them then there these they this those through to too under until up very was we were what when "
          "where which while who whom why will with would you your yours",
    "pt": "o os as um uma uns umas de do da dos das no na nos nas em por para com sem que se e ou mas como mais "
          "muito meu minha seu sua ao aos à às é era foi ser são está estão isso isto esse essa este esta ele ela "
          "eles elas eu nós você vocês lhe já não sim também quando onde qual quais porque",
    "es": "el la los las un una unos unas de del al a en y o u e que qué se con sin por para como cómo es son "
          "está están hay mi mis tu tus su sus lo le les me te nos yo él ella ellos ellas usted ustedes este esta "
          "estos estas ese esa esos esas esto eso más muy pero ya no sí también cuando cuándo donde dónde cual "
          "cuál cuáles quien quién porque puedo puede pueden has ha hemos han fue soy eres somos",
    "fr": "le la les un une des du de au aux à en et ou que qui quoi ne pas est sont être avoir ai je tu il elle "
          "on nous vous ils elles me te se mon ma mes ton ta tes sa ses notre nos votre vos leur leurs ce cet "
          "cette ces dans sur pour par avec sans plus mais comment quand où quel quelle quels quelles pourquoi "
          "y peux peut as avons avez ont été était suis es sommes êtes",
    "de": "der die das den dem des ein eine einen einem einer eines und oder aber in im an am auf aus bei mit "
          "nach von vom zu zum zur für über unter ist sind wird werden kann können ich du er sie es wir ihr mein "
          "meine meinen dein deine sein seine nicht kein keine wie was wo wann warum welche welcher welches auch "
          "noch nur dass als wenn sich mich mir dich dir hat habe haben hast hatte wurde wurden bin bist",
    "it": "il lo la i gli le un uno una di del della dei degli delle dello a al alla ai agli alle da dal dalla "
          "in nel nella nei nelle sul sulla con per tra fra e ed o che non come cosa è sono mi ti si ne mio mia "
          "tuo tua suo sua questo questa quello quella più ma anche quando dove quale quali perché posso può ho "
          "hai ha abbiamo avete hanno stato stata",
    "nl": "de het een en of in op van voor met aan bij naar uit te is zijn wordt kan ik je jij hij zij ze we wij "
          "mijn jouw niet geen hoe wat waar wanneer waarom welke ook maar dat dit deze om er",
    "pl": "i w we z ze na do o od po za przez dla jak co czy nie to jest są się mój moja moje ten ta te jaki "
          "jaka jakie gdzie kiedy dlaczego który która które oraz lub ale a mogę można",
    "ru": "и в во на с со к ко по о об от до из за для у не ни что как это этот эта эти я ты он она мы вы они "
          "мой моя мои свой его её их но а или ли же бы где когда почему какой какая какие который можно есть "
          "быть так тоже также",
    "tr": "ve veya ile bir bu şu o da de mi mı mu mü ne nasıl neden nerede hangi için gibi daha çok ama ben sen "
          "biz siz",
    "ar": "في من على إلى الى عن مع هذا هذه ذلك التي الذي أن إن ان ما لا هل كيف ماذا لماذا متى أين و أو ثم كل "
          "بين عند قد لم لن",
    "da": "og i på til af for med er en et den det de at som har jeg du han hun min mit mine ikke hvordan "
          "hvad hvor hvornår hvorfor hvilken hvilke kan også men eller om fra der",
    "vi": "của và là các những một được với trong này để cho thì mà hoặc tôi bạn như nào gì",
    # Czech and Indonesian with the words their writers type in a hurry (no accents; "nggak", "gimana"); not
    # Czech's one-letter k, s and v, which are what an English question asks about ("what value of k")
    "cs": "a i ve z ze se si na do o od po za při pri ke u že je jsou jsem jsi byl byla bylo být mám mam má "
          "máme mít jak co kde kdy proč proc který ktery která ktera které ktere kterou když kdyz nebo ani to ta tu "
          "tak také taky jen už uz ještě jeste můj muj moje mojí moji svůj svuj svoje svou já ja ty on ona my vy oni "
          "mi mě me mně mne ti tě mu jí ji nám vám chci chce chtěl chtel chtěla chtela potřebuju potrebuju potřebuji "
          "můžu muzu mohu může muze dá jde není neni nejde nemám nemam bych by aby jestli",
    "id": "yang yg dan di ke dari untuk dengan ini itu atau juga tidak nggak gak ga enggak bisa ada adalah akan "
          "sudah udah belum saya aku kamu kita kami mereka apa apakah bagaimana gimana kenapa mengapa kapan dimana "
          "siapa berapa kalau kalo jika agar biar supaya pada dalam oleh seperti kayak jadi ingin pengen tapi "
          "tetapi karena lagi banget sih dong nih kok ya",
    # Hebrew writes most of its prepositions and "the" against the word (lexical.hebrew_stems): these stand alone
    "he": "של את על עם אל מן כי אם או גם לא זה זו זאת אלה הוא היא הם הן אני אתה אנחנו אתם יש אין מה איך למה "
          "מתי איפה איזה איזו כל רק עוד כמו אבל אז כך",
    # Persian as typed on either keyboard (ی or ي, ک or ك); "می" and "ها" are a verb's and a plural's parts
    "fa": "و در به از که كه این اين آن با برای براي را تا یا يا هم نه است هست بود شد می مي ها های هاي من تو او "
          "ما شما چه چرا چطور چطوری چطوري چگونه کجا كجا یک يك هر اگر اما ولی ولي",
}

FUNCTION_WORDS = frozenset(word for words in BY_LANGUAGE.values() for word in words.split())
# French and Italian write an article, pronoun or preposition against the next word: l'érable, qu'il, dell'app
ELIDED = frozenset(("l", "d", "j", "m", "t", "s", "n", "c", "qu", "dell", "nell", "dall", "sull", "all", "un"))
